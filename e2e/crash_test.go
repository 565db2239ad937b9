package e2e

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKill9DuringAcksAllProduceLosesNothingAcknowledged kills the node with SIGKILL
// while an idempotent acks=all producer is writing, restarts it on the same data
// directory, and requires every acknowledged record to be readable exactly once, in
// the order it was produced within its key.
func TestKill9DuringAcksAllProduceLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	n := startNode(t, "")
	const topic, keys = "crash", 6
	admin, err := kgo.NewClient(kgo.SeedBrokers(n.addr))
	require.NoError(t, err)
	_, err = kadm.NewClient(admin).CreateTopic(ctx(t, 10*time.Second), 3, 1, nil, topic)
	admin.Close()
	require.NoError(t, err)

	prod, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(2),
		kgo.RecordDeliveryTimeout(5*time.Second))
	require.NoError(t, err)

	var mu sync.Mutex
	acked := map[string]bool{}
	var nAcked atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 1_000_000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := "k" + strconv.Itoa(i%keys)
			val := key + "-" + strconv.Itoa(i/keys)
			prod.Produce(ctx(t, 30*time.Second), &kgo.Record{Key: []byte(key), Value: []byte(val)},
				func(r *kgo.Record, err error) {
					if err == nil {
						mu.Lock()
						acked[string(r.Value)] = true
						mu.Unlock()
						nAcked.Add(1)
					}
				})
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for nAcked.Load() < 20_000 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.GreaterOrEqual(t, nAcked.Load(), int64(20_000), "producer made no progress; node log:\n%s",
		n.logText())
	n.kill() // in the middle of the stream: no graceful anything
	close(stop)
	<-done
	prod.Close() // fails whatever was still in flight
	mu.Lock()
	want := len(acked)
	mu.Unlock()

	n2 := startNode(t, n.data)
	seen := consumeAll(t, n2.addr, topic)
	count := map[string]int{}
	lastSeq := map[string]int{}
	for _, v := range seen {
		count[v]++
		key, seqText, _ := strings.Cut(v, "-")
		seq, err := strconv.Atoi(seqText)
		require.NoError(t, err)
		last, ok := lastSeq[key]
		require.True(t, !ok || seq > last, "key %s: %d after %d (out of order)", key, seq, last)
		lastSeq[key] = seq
	}
	for v, c := range count {
		require.Equal(t, 1, c, "record %s read %d times", v, c)
	}
	mu.Lock()
	defer mu.Unlock()
	missing := 0
	for v := range acked {
		if count[v] == 0 {
			missing++
		}
	}
	require.Zero(t, missing, "%d of %d acknowledged records lost", missing, want)
	t.Logf("acknowledged %d, read back %d", want, len(seen))
}

// consumeAll reads every record of topic from the beginning up to the end offsets
// seen at the start.
func consumeAll(t *testing.T, addr, topic string) []string {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	ends, err := kadm.NewClient(admin).ListEndOffsets(ctx(t, 10*time.Second), topic)
	admin.Close()
	require.NoError(t, err)
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var out []string
	c := ctx(t, 60*time.Second)
	for int64(len(out)) < total && c.Err() == nil {
		f := cl.PollFetches(c)
		for _, e := range f.Errors() {
			if c.Err() == nil {
				t.Fatalf("fetch error: %v", e.Err)
			}
		}
		f.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	require.Equal(t, total, int64(len(out)), "read %d of %d records", len(out), total)
	return out
}
