package testport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// span is how many ports below the ephemeral range are used.
const span = 12000

// rangeFile holds the kernel's ephemeral port range on Linux.
const rangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Pick returns a loopback port free at this moment, never one it returned before in
// this process. It prefers ports below the ephemeral range (see the package doc) and
// falls back to asking the kernel when that range is unknown.
func Pick() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	lo, hi := pickRange()
	for range 500 {
		port := 0
		if hi > lo {
			port = lo + rand.IntN(hi-lo)
		}
		got, err := tryBind(port)
		if err != nil {
			continue
		}
		if !handedOut.ports[got] {
			handedOut.ports[got] = true
			return got, nil
		}
	}
	return 0, errors.New("testport: no free loopback port in 500 tries")
}

// Addr is Pick as "127.0.0.1:PORT".
func Addr() (string, error) {
	p, err := Pick()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

// tryBind binds and releases 127.0.0.1:port (port 0: any) and returns the port bound.
func tryBind(port int) (int, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return 0, err
	}
	got := l.Addr().(*net.TCPAddr).Port
	return got, l.Close()
}

// pickRange is [lo, hi) below the ephemeral range, or (0, 0) when it is unknown.
func pickRange() (lo, hi int) {
	b, err := os.ReadFile(rangeFile)
	if err != nil {
		return 0, 0
	}
	return rangeBelow(string(b))
}

// rangeBelow parses ip_local_port_range ("32768\t60999") into the span below it.
func rangeBelow(s string) (lo, hi int) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, 0
	}
	ephLo, err := strconv.Atoi(f[0])
	if err != nil || ephLo <= 1024 {
		return 0, 0
	}
	hi = ephLo
	lo = max(1024, hi-span)
	return lo, hi
}
