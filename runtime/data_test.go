package runtime_test

import (
	"cmp"
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
)

// produceKeyed produces count records over keys key-0..key-(keys-1); each value is the
// record's sequence number within its key. It waits for every acknowledgement.
func produceKeyed(t *testing.T, cl *kgo.Client, topic string, count, keys int) {
	t.Helper()
	require.NoError(t, produceKeyedErr(testCtx(t, 60*time.Second), cl, topic, count, keys, nil))
}

// produceKeyedErr is produceKeyed for a goroutine other than the test's; acked (when not
// nil) counts acknowledgements as they arrive.
func produceKeyedErr(ctx context.Context, cl *kgo.Client, topic string, count, keys int,
	acked *atomic.Int64) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range count {
		k := i % keys
		rec := &kgo.Record{Topic: topic, Key: []byte("key-" + strconv.Itoa(k)),
			Value: []byte(strconv.Itoa(i / keys))}
		wg.Add(1)
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err == nil && acked != nil {
				acked.Add(1)
			}
			if err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// consumeAll reads count records of topic from the beginning and checks that each
// partition's offsets increase by one and each key's values come in order.
func consumeAll(t *testing.T, cl *kgo.Client, count int) map[int32]int {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	nextOffset := map[int32]int64{}
	nextSeq := map[string]int{}
	perPartition := map[int32]int{}
	got := 0
	for got < count {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "only %d of %d records arrived", got, count)
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s-%d: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			require.Equal(t, nextOffset[r.Partition], r.Offset, "partition %d", r.Partition)
			nextOffset[r.Partition]++
			seq, err := strconv.Atoi(string(r.Value))
			require.NoError(t, err)
			require.Equal(t, nextSeq[string(r.Key)], seq, "key %s", r.Key)
			nextSeq[string(r.Key)]++
			perPartition[r.Partition]++
			got++
		})
	}
	return perPartition
}

func TestNode100kKeyedRecordsKeepPartitionOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("100k records")
	}
	n := startNode(t, "")
	cl := newClient(t, n, kgo.ProducerLinger(5*time.Millisecond))
	createTopic(t, cl, "orders", 6)
	const total, keys = 100_000, 500
	start := time.Now()
	produceKeyed(t, cl, "orders", total, keys)
	t.Logf("produced %d records in %v", total, time.Since(start))

	cons := newClient(t, n, kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	start = time.Now()
	perPartition := consumeAll(t, cons, total)
	t.Logf("consumed %d records in %v: %v", total, time.Since(start), perPartition)
	require.Len(t, perPartition, 6, "keys spread over every partition")
}

func TestNodeRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	first := startNode(t, dir)
	cl := newClient(t, first)
	createTopic(t, cl, "kept", 3)
	produceKeyed(t, cl, "kept", 3000, 30)
	cl.Close()
	require.NoError(t, first.Close())

	second := startNode(t, dir)
	cons := newClient(t, second, kgo.ConsumeTopics("kept"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	perPartition := consumeAll(t, cons, 3000)
	require.Len(t, perPartition, 3)

	// The restarted node takes new writes after the recovered ones.
	prod := newClient(t, second, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	res := prod.ProduceSync(testCtx(t, 10*time.Second),
		&kgo.Record{Topic: "kept", Partition: 0, Value: []byte("after")})
	require.NoError(t, res.FirstErr())
	require.Equal(t, int64(perPartition[0]), res[0].Record.Offset)
}

// TestNodeIdempotentRetryGetsOriginalOffset sends the same idempotent batch twice, as a
// producer retrying after a lost response does, before and after a restart: the retry
// must be answered with the first attempt's offset and not be written again.
func TestNodeIdempotentRetryGetsOriginalOffset(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	cl := newClient(t, n)
	createTopic(t, cl, "idem", 1)
	ctx := testCtx(t, 20*time.Second)

	initReq := kmsg.NewPtrInitProducerIDRequest()
	initResp, err := initReq.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(initResp.ErrorCode))
	p := batch.Producer{ID: initResp.ProducerID, Epoch: initResp.ProducerEpoch}

	send := func(cl *kgo.Client, seq int32, values ...string) (int64, error) {
		kvs := make([]batch.KV, len(values))
		for i, v := range values {
			kvs[i] = batch.KV{Value: []byte(v)}
		}
		p.BaseSequence = seq
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		topic := kmsg.NewProduceRequestTopic()
		topic.Topic = "idem"
		part := kmsg.NewProduceRequestTopicPartition()
		part.Records = batch.Build(kvs, p, time.Now().UnixMilli())
		topic.Partitions = append(topic.Partitions, part)
		req.Topics = append(req.Topics, topic)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, err
		}
		rp := resp.Topics[0].Partitions[0]
		return rp.BaseOffset, kerr.ErrorForCode(rp.ErrorCode)
	}

	off, err := send(cl, 0, "a", "b")
	require.NoError(t, err)
	require.Equal(t, int64(0), off)
	off, err = send(cl, 2, "c")
	require.NoError(t, err)
	require.Equal(t, int64(2), off)
	off, err = send(cl, 0, "a", "b") // retry of the first batch
	require.NoError(t, err)
	require.Equal(t, int64(0), off)
	_, err = send(cl, 7, "gap")
	require.ErrorIs(t, err, kerr.OutOfOrderSequenceNumber)

	cl.Close()
	require.NoError(t, n.Close())
	n = startNode(t, dir)
	cl = newClient(t, n)
	off, err = send(cl, 2, "c") // retry after a restart: producer state survived
	require.NoError(t, err)
	require.Equal(t, int64(2), off)
	off, err = send(cl, 3, "d")
	require.NoError(t, err)
	require.Equal(t, int64(3), off)

	cons := newClient(t, n, kgo.ConsumeTopics("idem"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 4 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	require.Equal(t, []string{"a", "b", "c", "d"}, got, "no duplicates written")
}

// TestNodeIdempotentProducerSurvivesRestart restarts the node on the same address while
// kgo's idempotent producer (its default) has batches in flight, so the producer has to
// reconnect and retry. Every acknowledged record must be there exactly once, in order
// per key.
func TestNodeIdempotentProducerSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	addr := n.Addr()
	cl := newClient(t, n, kgo.ProducerLinger(time.Millisecond))
	createTopic(t, cl, "idem2", 2)
	// Enough that the producer cannot finish while Close runs: with 50,000 it once
	// did, under load (all acknowledged before the node stopped).
	const total, keys = 200_000, 20
	produced := make(chan error, 1)
	var acked atomic.Int64
	go func() {
		produced <- produceKeyedErr(testCtx(t, 60*time.Second), cl, "idem2", total, keys, &acked)
	}()
	require.Eventually(t, func() bool { return acked.Load() > 1000 }, 10*time.Second,
		time.Millisecond, "some records are acknowledged before the restart")
	require.NoError(t, n.Close())
	ackedBefore := acked.Load()
	require.Less(t, ackedBefore, int64(total), "the restart happens while producing")
	n = startNodeAt(t, dir, addr)
	select {
	case err := <-produced:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("producer did not finish after the restart")
	}
	cons := newClient(t, n, kgo.ConsumeTopics("idem2"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	perPartition := consumeAll(t, cons, total) // checks order and no duplicates per key
	sum := 0
	for _, c := range perPartition {
		sum += c
	}
	require.Equal(t, total, sum)
}
