package e2e

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The requireServes probe, over and over on fresh topics, while hundreds of silent SASL
// connections open and are closed (by the client, or by
// sluice.sasl.authentication.timeout.ms): the load under which TestHostileSASLClients
// once failed its probe. It found that the probe, not the node, was at fault (a first
// Fetch without the produced partition, hostile_helpers_test.go); it stays as the way
// to look for a stall under connection churn. Opt-in and as long as asked:
// SLUICE_E2E_PROBE_STRESS=3m. Each probe must end within 5 s, as requireServes' do.
// A probe now and then takes about 1 s: a topic every few tens of milliseconds outruns
// sluice.auto.create.partitions.per.sec, the topic is answered LEADER_NOT_AVAILABLE,
// and franz-go retries its ListOffsets after a fixed second.
func TestHostileProbeUnderConnectionChurn(t *testing.T) {
	dur, err := time.ParseDuration(os.Getenv("SLUICE_E2E_PROBE_STRESS"))
	if err != nil {
		t.Skip("set SLUICE_E2E_PROBE_STRESS to a duration (3m) to run the probe stress")
	}
	s := startSASLNode(t, "sluice.sasl.authentication.timeout.ms=1000\n"+
		"connection.failed.authentication.delay.ms=10\nmax.connections.per.ip=2000\n")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			churnSASL(s.saslPlain, fmt.Sprintf("127.0.0.%d", 2+g), stop)
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	deadline := time.Now().Add(dur)
	var worst time.Duration
	probes := 0
	for time.Now().Before(deadline) {
		probes++
		took, err := s.serves(fmt.Sprintf("probe-%d", probes), 5*time.Second)
		if err != nil {
			t.Fatalf("probe %d of a fresh topic: %v\nnode log tail (SASL timeouts left "+
				"out):\n%s", probes, err, s.logTailWithout(40,
				"SASL authentication not finished"))
		}
		worst = max(worst, took)
	}
	t.Logf("%d probes over %v, the slowest %v", probes, dur, worst)
}

// churnSASL opens 100 SASL connections from local, a quarter of them sending a
// SaslHandshake and nothing more, closes half after 0.7 s and the rest 0.5 s later (the
// node's 1 s authentication timeout closes most of those first), until stop.
func churnSASL(addr, local string, stop <-chan struct{}) {
	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.SetVersion(1)
	handshake.Mechanism = "PLAIN"
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	for {
		select {
		case <-stop:
			return
		default:
		}
		var conns []net.Conn
		for i := range 100 {
			nc, err := d.Dial("tcp", addr)
			if err != nil {
				continue
			}
			if i%4 == 0 {
				_, _ = nc.Write(formatter.AppendRequest(nil, handshake, 1))
			}
			conns = append(conns, nc)
		}
		time.Sleep(700 * time.Millisecond)
		for i, nc := range conns {
			if i%2 == 0 {
				_ = nc.Close()
			}
		}
		time.Sleep(500 * time.Millisecond)
		for _, nc := range conns {
			_ = nc.Close()
		}
	}
}

// logTailWithout is logTail without the lines holding skip.
func (n *node) logTailWithout(lines int, skip string) string {
	var kept []string
	for _, l := range strings.Split(strings.TrimRight(n.logText(), "\n"), "\n") {
		if !strings.Contains(l, skip) {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept[max(0, len(kept)-lines):], "\n")
}
