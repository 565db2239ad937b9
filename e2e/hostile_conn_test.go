package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Hostile connections (docs/limits.md, "Connections and requests"): idle floods, slow
// frames, huge frames, and fetchers that never read, against the real binary with
// short limits from a config file.

// startNodeWith starts a node with the given config-file settings.
func startNodeWith(t *testing.T, settings ...string) *node {
	t.Helper()
	return startNodeWithArgs(t, nil, settings...)
}

// startNodeWithArgs starts a node with the given config-file settings and arguments.
func startNodeWithArgs(t *testing.T, args []string, settings ...string) *node {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.properties")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(settings, "\n")+"\n"), 0o644))
	return startNode(t, "", append([]string{"--config", path}, args...)...)
}

// dialFrom connects to the node from a loopback address of its own (all of 127/8 is
// loopback on Linux).
func dialFrom(t *testing.T, addr, local string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

var formatter = kmsg.NewRequestFormatter(kmsg.FormatterClientID("hostile"))

// roundTrip sends req and reads one response frame, within bound.
func roundTrip(t *testing.T, nc net.Conn, req kmsg.Request, bound time.Duration) []byte {
	t.Helper()
	require.NoError(t, nc.SetDeadline(time.Now().Add(bound)))
	_, err := nc.Write(formatter.AppendRequest(nil, req, 1))
	require.NoError(t, err)
	var size [4]byte
	_, err = readFull(nc, size[:])
	require.NoError(t, err, "no response")
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = readFull(nc, body)
	require.NoError(t, err)
	return body
}

func readFull(nc net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := nc.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// requireClosedBy asserts the node closes nc within bound.
func requireClosedBy(t *testing.T, nc net.Conn, bound time.Duration) {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(bound)))
	buf := make([]byte, 64<<10)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "not closed within %v", bound)
		return
	}
}

func TestHostileIdleConnectionFlood(t *testing.T) {
	n := startNodeWith(t, "max.connections.per.ip=100", "connections.max.idle.ms=1500",
		"max.connections.per.ip.overrides=127.0.0.3:1")
	flood := make([]net.Conn, 300)
	for i := range flood {
		flood[i] = dialFrom(t, n.addr, "127.0.0.1")
	}
	// Another address is served at once, flood or not.
	other := dialFrom(t, n.addr, "127.0.0.2")
	roundTrip(t, other, kmsg.NewPtrApiVersionsRequest(), 2*time.Second)
	// The override caps 127.0.0.3 at one connection.
	roundTrip(t, dialFrom(t, n.addr, "127.0.0.3"), kmsg.NewPtrApiVersionsRequest(), 2*time.Second)
	requireClosedBy(t, dialFrom(t, n.addr, "127.0.0.3"), 2*time.Second)
	// The idle ones are closed after connections.max.idle.ms, freeing 127.0.0.1.
	for _, nc := range flood {
		requireClosedBy(t, nc, 5*time.Second)
	}
	require.Contains(t, n.logText(), "max.connections.per.ip")
	require.Contains(t, n.logText(), "closing idle connection")
	n.requireServes("after-idle-flood", 2*time.Second)
	n.requireWithin(200<<20, 200)
}

func TestHostileTrickledFrame(t *testing.T) {
	n := startNodeWith(t, "sluice.request.read.timeout.ms=500")
	nc := dialFrom(t, n.addr, "127.0.0.1")
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a 1000-byte frame at one byte per 50ms
		defer wg.Done()
		_, _ = nc.Write([]byte{0, 0, 3, 232})
		for range 1000 {
			if _, err := nc.Write([]byte{0}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	requireClosedBy(t, nc, 3*time.Second)
	require.Less(t, time.Since(start), 2*time.Second)
	wg.Wait()
	require.Contains(t, n.logText(), "sluice.request.read.timeout.ms")
	n.requireServes("after-trickle", 2*time.Second)
	n.requireWithin(200<<20, 200)
}

func TestHostileHugeFramesStayWithinTheRequestBudget(t *testing.T) {
	n := startNodeWith(t, "sluice.request.read.timeout.ms=1500",
		"queued.max.request.bytes=268435456")
	const frame = 100 << 20
	part := make([]byte, 4+frame*9/10)
	binary.BigEndian.PutUint32(part, frame)
	conns := make([]net.Conn, 5)
	var wg sync.WaitGroup
	for i := range conns {
		conns[i] = dialFrom(t, n.addr, "127.0.0.1")
		wg.Add(1)
		go func(nc net.Conn) { // 90 MiB of a 100 MiB frame, then nothing
			defer wg.Done()
			_ = nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
			_, _ = nc.Write(part)
		}(conns[i])
	}
	peak := n.watchPeak()
	for _, nc := range conns {
		requireClosedBy(t, nc, 10*time.Second)
	}
	wg.Wait()
	p := peak()
	t.Logf("peak RSS while 5 frames of 100 MiB were half-sent: %.1f MiB",
		float64(p.rssBytes)/(1<<20))
	require.Less(t, p.rssBytes, int64(600<<20), "RSS while frames were read: %s", p)
	n.requireServes("after-huge-frames", 2*time.Second)
	n.requireWithin(600<<20, 200)
}

func TestHostileFetchersThatNeverRead(t *testing.T) {
	n := startNodeWith(t, "sluice.connection.write.timeout.ms=1000", "num.partitions=1")
	const topic = "big"
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.AllowAutoTopicCreation(),
		kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(1_000_000),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	value := make([]byte, 512<<10)
	var produceErr error
	var mu sync.Mutex
	for range 64 { // 32 MiB of log
		cl.Produce(ctx(t, 30*time.Second), &kgo.Record{Value: value},
			func(_ *kgo.Record, err error) { mu.Lock(); produceErr = cmpErr(produceErr, err); mu.Unlock() })
	}
	require.NoError(t, cl.Flush(ctx(t, 30*time.Second)))
	require.NoError(t, produceErr)
	cl.Close()
	base := n.stats()

	conns := make([]net.Conn, 4)
	for i := range conns {
		conns[i] = dialFrom(t, n.addr, "127.0.0.1")
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(11)
		req.MaxBytes, req.MaxWaitMillis = 1<<31-1, 100
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1<<31 - 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		var frames []byte
		for corr := range int32(20) { // 20 fetches each, never read
			frames = formatter.AppendRequest(frames, req, corr)
		}
		_, err := conns[i].Write(frames)
		require.NoError(t, err)
	}
	peak := n.watchPeak()
	defer func() {
		if t.Failed() {
			t.Log(n.logText())
		}
	}()
	// Reading to see the close would be reading the responses: count the node's lines.
	// A bound, not a speed check: under a load of 18 on two cores 10 s was not enough.
	waitFor(t, 60*time.Second, "the 4 fetchers closed for not reading", func() bool {
		return strings.Count(n.logText(), "sluice.connection.write.timeout.ms") == len(conns)
	})
	p := peak()
	t.Logf("before: %s; peak RSS with 4 fetchers that never read: %.1f MiB", base,
		float64(p.rssBytes)/(1<<20))
	require.Less(t, p.rssBytes, int64(1<<30), "RSS with unread fetches: %s", p)
	n.requireServes("after-unread-fetches", 2*time.Second)
	n.requireWithin(1<<30, 200)
}

func cmpErr(old, err error) error {
	if old != nil {
		return old
	}
	return err
}

// watchPeak samples the node's stats every 10ms until the returned function is called,
// which returns the sample with the highest RSS.
func (n *node) watchPeak() func() procStats {
	stop, done := make(chan struct{}), make(chan procStats)
	go func() {
		var peak procStats
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
			if s, ok := tryStats(n.cmd.Process.Pid); ok && s.rssBytes > peak.rssBytes {
				peak = s
			}
		}
	}()
	return func() procStats { close(stop); return <-done }
}

// tryStats reads a process's RSS from /proc without failing the test (it runs on a
// goroutine of its own).
func tryStats(pid int) (procStats, bool) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStats{}, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(
				strings.TrimSpace(rest), "kB")), 10, 64)
			return procStats{rssBytes: kb << 10}, err == nil
		}
	}
	return procStats{}, false
}
