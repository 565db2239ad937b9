package e2e

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 10's hostile-client test: every attack at once. `sluice bench hostile` (as make
// bench runs it) opens 2,000 connections from 127.0.0.2 to a node process: 20 producers
// ignoring the ThrottleMillis of their client id's quota, 100 slow-loris clients
// trickling a frame, and 1,880 that say hello and sit idle. Meanwhile a well-behaved
// client on 127.0.0.1 produces one record at a time with acks=all and then reads them
// back. Speed is not asserted (docs/benchmarks.md, "Hostile clients", records it): only
// that each produce and the consume succeed within 10 s, that the node held the
// attackers to its limits (max.connections.per.ip, the read timeout, the quota), and
// that it serves and lets go of the connections afterwards.
func TestHostileCombinedLoadLeavesAWellBehavedClientServed(t *testing.T) {
	const perIP, idle, slow, greedy = 1000, 1880, 100, 20
	const quota = 100 << 10
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	n := startNodeWithArgs(t, []string{"--http-listen", httpAddr},
		fmt.Sprintf("max.connections.per.ip=%d", perIP), "sluice.request.read.timeout.ms=1000",
		"quota.window.num=2")
	code, out, took := runSluice(t, 2*time.Minute, nil, "bench", "hostile",
		"--bootstrap", n.addr, "--metrics", "http://"+httpAddr+"/metrics",
		"--server-pid", strconv.Itoa(n.cmd.Process.Pid), "--source", "127.0.0.2",
		"--conns", strconv.Itoa(idle+slow+greedy), "--slow", strconv.Itoa(slow),
		"--greedy", strconv.Itoa(greedy), "--slow-interval", "200ms",
		"--quota", strconv.Itoa(quota), "--baseline-time", "2s", "--time", "6s",
		"--bound", "10s")
	t.Logf("sluice bench hostile took %v:\n%s", took, out)
	require.Equal(t, 0, code, "every produce and consume within 10 s:\n%s", out)

	for _, phase := range []string{"hostile_baseline", "hostile"} {
		require.Less(t, ackMax(t, out, "produce_"+phase), 10*time.Second, phase)
		require.Less(t, figureInt(t, out, phase+"_consume", "took_ms"), int64(10_000))
	}
	c := func(key string) int64 { return figureInt(t, out, "hostile_connections", key) }
	nodeSaw := func(key string) int64 { return figureInt(t, out, "hostile_node", key) }
	// max.connections.per.ip: the greedy and slow ones came first; of the idle flood
	// only what was left under the cap was accepted, the rest closed at once.
	require.Zero(t, c("greedy_closed"), "the greedy connections are throttled, not closed")
	require.Equal(t, int64(idle), c("idle_accepted")+c("idle_refused"))
	require.LessOrEqual(t, c("idle_accepted"), int64(perIP-greedy))
	require.GreaterOrEqual(t, c("idle_refused"), int64(idle+greedy-perIP))
	require.GreaterOrEqual(t, nodeSaw("refused_per_ip"), c("idle_refused")+c("slow_refused"))
	require.Contains(t, n.logText(), "too many connections from one address")
	require.LessOrEqual(t, nodeSaw("conns_open"), int64(perIP+50), "127.0.0.1 holds a few")
	require.Zero(t, c("idle_closed"), "connections.max.idle.ms is 10 minutes")
	// sluice.request.read.timeout.ms: each slow frame was cut after 1 s (the bound
	// allows a loaded machine 9 s more), the first connection of each at least.
	require.GreaterOrEqual(t, c("slow_closes"), int64(slow))
	require.GreaterOrEqual(t, c("slow_close_min_ms"), int64(900))
	require.Less(t, c("slow_close_max_ms"), int64(10_000))
	require.GreaterOrEqual(t, nodeSaw("read_timeouts"), c("slow_closes"))
	// The quota: throttled, and held to a few times its rate (one second's burst).
	require.Positive(t, figureInt(t, out, "hostile_greedy", "throttled"))
	kib, err := strconv.ParseFloat(figureField(t, out, "hostile_greedy", "KiB_per_s"), 64)
	require.NoError(t, err)
	require.Less(t, kib, 5.0*quota/1024, "the greedy clients are held near their quota")

	// Afterwards: alive, serving, and the connections let go.
	require.NoError(t, n.cmd.Process.Signal(syscall.Signal(0)), "the node is alive")
	n.requireServes("after-combined", 10*time.Second)
	waitFor(t, 20*time.Second, "the node to close the bench's connections", func() bool {
		return n.stats().fds < 200
	})
	n.requireWithin(1<<30, 200)
}

// figureField is the value of key on the FIGURE line of test in out.
func figureField(t *testing.T, out, test, key string) string {
	t.Helper()
	line := regexp.MustCompile(`(?m)^FIGURE system=sluice test=` + regexp.QuoteMeta(test) +
		` .*$`).FindString(out)
	require.NotEmpty(t, line, "no FIGURE line of %s in:\n%s", test, out)
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	require.FailNow(t, fmt.Sprintf("no %s= in %q", key, line))
	return ""
}

func figureInt(t *testing.T, out, test, key string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(figureField(t, out, test, key), 10, 64)
	require.NoError(t, err, "%s %s", test, key)
	return v
}

// ackMax is the max: of a produce figure's ack_latency.
func ackMax(t *testing.T, out, test string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(`(?m)^FIGURE system=sluice test=` + regexp.QuoteMeta(test) +
		` .*max:(\S+)\)`).FindStringSubmatch(out)
	require.NotNil(t, m, "no ack_latency max of %s in:\n%s", test, out)
	d, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	return d
}
