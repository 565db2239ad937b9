package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Helpers of the hostile-client suite (hostile_*_test.go): after each attack a normal
// client must still produce and consume within a bound, and the node's memory and
// descriptors must stay under generous ceilings (docs/limits.md records the measured
// values precisely; the tests only catch regressions of an order of magnitude).

// procStats is what /proc says about a process: resident memory and open descriptors.
type procStats struct {
	rssBytes int64
	fds      int
}

func (s procStats) String() string {
	return fmt.Sprintf("rss=%.1f MiB fds=%d", float64(s.rssBytes)/(1<<20), s.fds)
}

// statsOf reads VmRSS from /proc/<pid>/status and counts /proc/<pid>/fd.
func statsOf(t *testing.T, pid int) procStats {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	var s procStats
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(
				strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			s.rssBytes = kb << 10
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	require.NoError(t, err)
	s.fds = len(fds)
	return s
}

// stats reads the node process's procStats.
func (n *node) stats() procStats { return statsOf(n.t, n.cmd.Process.Pid) }

// requireWithin fails the test when the node's RSS or descriptor count is over the
// ceilings, and logs the values either way.
func (n *node) requireWithin(maxRSSBytes int64, maxFDs int) {
	n.t.Helper()
	s := n.stats()
	n.t.Logf("node after the attack: %s", s)
	require.LessOrEqual(n.t, s.rssBytes, maxRSSBytes, "node RSS over its ceiling: %s", s)
	require.LessOrEqual(n.t, s.fds, maxFDs, "node descriptors over their ceiling: %s", s)
}

// requireServes checks that a well-behaved client still gets through: a fresh franz-go
// client produces one record with acks=all to partition 0 of topic (auto-created when
// missing) and reads it back, all within bound.
func (n *node) requireServes(topic string, bound time.Duration) {
	n.t.Helper()
	took, err := n.serves(topic, bound)
	if err != nil {
		n.t.Fatalf("%v\nnode log tail:\n%s", err, n.logTail(40))
	}
	n.t.Logf("a normal client produced and consumed in %v", took)
}

// serves is requireServes' probe: it returns how long the round took, or what failed
// with the client's debug log (a stall is then either the node's, a request sent and
// not answered, or the client's, a backoff or a fetch that did not ask for the record).
//
// The record goes to partition 0 and the consumer reads partition 0 alone. Consuming
// the whole topic made the probe flaky: franz-go makes each partition usable as its
// ListOffsets result is applied, and may send its first Fetch (max wait 5 s) with only
// some of them; a record produced to another partition then waited out that long poll,
// as Kafka would make it wait, and the probe's bound of a few seconds ran out. With one
// partition the first Fetch always asks for the record: it is either answered at once
// or parked and woken by the produce, so a missed wake still fails the probe.
func (n *node) serves(topic string, bound time.Duration) (time.Duration, error) {
	c, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	start := time.Now()
	var clientLog bytes.Buffer
	var logMu sync.Mutex
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.AllowAutoTopicCreation(),
		kgo.WithLogger(kgo.BasicLogger(lockedWriter{&logMu, &clientLog}, kgo.LogLevelDebug,
			func() string { return time.Now().Format("15:04:05.000 ") })),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.MaxBufferedRecords(16),
		// A partition still opening after a restart answers LEADER_NOT_AVAILABLE; with
		// franz-go's default 5 s metadata min age the retry alone could use the whole
		// bound. The probe measures the node, not the client's backoff.
		kgo.MetadataMinAge(250*time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	val := fmt.Sprintf("probe-%d", time.Now().UnixNano())
	if err := cl.ProduceSync(c, &kgo.Record{Topic: topic, Partition: 0,
		Value: []byte(val)}).FirstErr(); err != nil {
		return time.Since(start), fmt.Errorf("a normal producer was not served within %v: "+
			"%v\nclient log:\n%s", bound, err, locked(&logMu, &clientLog))
	}
	for {
		fs := cl.PollFetches(c)
		if err := c.Err(); err != nil {
			return time.Since(start), fmt.Errorf("a normal consumer did not read its record "+
				"within %v (fetch errors: %v)\nclient log:\n%s", bound, fs.Errors(),
				locked(&logMu, &clientLog))
		}
		found := false
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == val })
		if found {
			return time.Since(start), nil
		}
	}
}

// lockedWriter serialises the client's log writes (its goroutines log concurrently).
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func locked(mu *sync.Mutex, b *bytes.Buffer) string {
	mu.Lock()
	defer mu.Unlock()
	return b.String()
}

// logTail returns the last lines of the node's log, for a failure message.
func (n *node) logTail(lines int) string {
	all := strings.Split(strings.TrimRight(n.logText(), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
