package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// compactedRead is what a reader from the log start sees of a compacted partition.
type compactedRead struct {
	offsets []int64
	last    map[string]*string // key → last value read (nil: tombstone)
	count   map[string]int     // key → records read
}

// readCompacted consumes partition 0 of topic from the start up to end (exclusive).
func readCompacted(t *testing.T, addr, topic string, end int64) compactedRead {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			topic: {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	r := compactedRead{last: map[string]*string{}, count: map[string]int{}}
	c := ctx(t, 30*time.Second)
	for len(r.offsets) == 0 || r.offsets[len(r.offsets)-1] < end-1 {
		fs := cl.PollFetches(c)
		require.NoError(t, c.Err(), "read %d records, want up to offset %d", len(r.offsets), end)
		fs.EachError(func(_ string, _ int32, err error) { require.NoError(t, err) })
		fs.EachRecord(func(rec *kgo.Record) {
			r.offsets = append(r.offsets, rec.Offset)
			k := string(rec.Key)
			r.count[k]++
			if rec.Value == nil {
				r.last[k] = nil
			} else {
				v := string(rec.Value)
				r.last[k] = &v
			}
		})
	}
	return r
}

// TestCompactedTopicKeepsTheLastValuePerKeyAcrossRestart produces several values per
// key and tombstones to a compacted topic with small segments, waits (polling) until
// the cleaner left one record per key in the closed segments, kills the node, restarts
// it and reads from the start with franz-go (and kcat when installed): exactly the last
// value of every key, the tombstones (within delete.retention.ms), offsets increasing.
func TestCompactedTopicKeepsTheLastValuePerKeyAcrossRestart(t *testing.T) {
	props := filepath.Join(t.TempDir(), "node.properties")
	require.NoError(t, os.WriteFile(props, []byte("log.cleaner.backoff.ms=100\n"), 0o600))
	n := startNode(t, "", "--config", props)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node log:\n%s", n.logText())
		}
	})
	const topic = "changelog"
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	res, err := adm.CreateTopic(ctx(t, 20*time.Second), 1, 1, map[string]*string{
		"cleanup.policy": ptr("compact"), "segment.bytes": ptr("1024"),
		"delete.retention.ms": ptr("3600000"), "min.cleanable.dirty.ratio": ptr("0.01"),
	}, topic)
	require.NoError(t, err)
	require.NoError(t, res.Err)

	produce := func(key, value []byte) int64 {
		rec := &kgo.Record{Topic: topic, Key: key, Value: value}
		r := cl.ProduceSync(ctx(t, 20*time.Second), rec)
		require.NoError(t, r.FirstErr())
		return rec.Offset
	}
	// A keyless record is refused as Kafka refuses it.
	r := cl.ProduceSync(ctx(t, 20*time.Second), &kgo.Record{Topic: topic, Value: []byte("x")})
	require.True(t, errors.Is(r.FirstErr(), kerr.InvalidRecord), "got %v", r.FirstErr())

	const keys, rounds = 10, 12
	want := map[string]*string{}
	for round := 0; round < rounds; round++ {
		for k := 0; k < keys; k++ {
			key, val := fmt.Sprintf("k%d", k), fmt.Sprintf("v%d-%d", k, round)
			produce([]byte(key), []byte(val))
			want[key] = &val
		}
	}
	for _, k := range []string{"k8", "k9"} { // tombstones
		produce([]byte(k), nil)
		want[k] = nil
	}
	// A record bigger than segment.bytes rolls the log before it, so every record
	// above is in a closed segment, which the cleaner may rewrite.
	big := strings.Repeat("x", 2048)
	end := produce([]byte("sentinel"), []byte(big)) + 1
	want["sentinel"] = &big
	total := keys*rounds + 2 + 1

	deadline := time.Now().Add(30 * time.Second)
	var got compactedRead
	for {
		got = readCompacted(t, n.addr, topic, end)
		if len(got.offsets) == len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Len(t, got.offsets, len(want), "the cleaner left one record per key (of %d)",
		total)

	n.kill()
	n = restartNodeAt(t, n, "--config", props)
	got = readCompacted(t, n.addr, topic, end)
	require.Equal(t, want, got.last, "the last value of every key, tombstones included")
	for k, c := range got.count {
		require.Equal(t, 1, c, "key %s read %d times", k, c)
	}
	for i := 1; i < len(got.offsets); i++ {
		require.Greater(t, got.offsets[i], got.offsets[i-1], "offsets increase")
	}
	require.Equal(t, end-1, got.offsets[len(got.offsets)-1], "offsets are kept")

	if _, err := exec.LookPath("kcat"); err != nil {
		t.Log("kcat not installed: skipping the kcat read")
		return
	}
	out, err := kcat(t, 20*time.Second, nil, "-b", n.addr, "-C", "-t", topic, "-p", "0",
		"-o", "beginning", "-e", "-Z", "-f", "%o %k=%s\n")
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if len(l) > 60 {
			l = l[:60] + "..."
		}
		lines = append(lines, l)
	}
	t.Logf("kcat reads the compacted topic from the start:\n%s", strings.Join(lines, "\n"))
	require.Len(t, lines, len(want))
	require.Contains(t, out, fmt.Sprintf("k0=v0-%d\n", rounds-1))
	require.Contains(t, out, "k8=NULL\n")
}

func ptr(s string) *string { return &s }
