package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

func produceReq(acks int16, topic string, part int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = maxVersion(kmsg.Produce), acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = part, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func values(vals ...string) []byte {
	kvs := make([]batch.KV, len(vals))
	for i, v := range vals {
		kvs[i] = batch.KV{Value: []byte(v)}
	}
	return batch.Build(kvs, batch.NoProducer, 1_000)
}

func producePart(t *testing.T, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	pr := resp.(*kmsg.ProduceResponse)
	require.Len(t, pr.Topics, 1)
	require.Len(t, pr.Topics[0].Partitions, 1)
	return pr.Topics[0].Partitions[0]
}

func TestProduceAcksAllWaitsForFsync(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.holdSyncs = true
	id := h.send(produceReq(-1, "t", 0, values("a", "b")))
	h.settle()
	_, answered := h.reply(id)
	require.False(t, answered, "acks=all must wait for the fsync")
	require.Len(t, h.env.syncs, 1, "one sync was asked for")

	// Group commit: a second batch while the sync runs waits for the next one.
	id2 := h.send(produceReq(-1, "t", 0, values("c")))
	require.Len(t, h.env.syncs, 1, "no second sync while one is in flight")
	h.holdSyncs = false
	h.settle()
	resp, ok := h.reply(id)
	require.True(t, ok)
	p := producePart(t, resp)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, int64(0), p.BaseOffset)
	resp2, ok := h.reply(id2)
	require.True(t, ok)
	require.Equal(t, int64(2), producePart(t, resp2).BaseOffset)
}

func TestProduceAcksOneAndZero(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.holdSyncs = true
	id := h.send(produceReq(1, "t", 0, values("a")))
	resp, ok := h.reply(id)
	require.True(t, ok, "acks=1 is answered once written")
	require.Zero(t, producePart(t, resp).ErrorCode)

	id = h.send(produceReq(0, "t", 0, values("b")))
	r, ok := h.env.replies[id]
	require.True(t, ok)
	require.Nil(t, r.Msg, "acks=0 sends no response")
	h.holdSyncs = false
	h.settle()
	require.Equal(t, int64(2), h.b.replicas[tp("t", 0)].HighWatermark())
}

func TestProduceErrors(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1, "max.message.bytes=200")
	cases := []struct {
		name string
		req  *kmsg.ProduceRequest
		code int16
	}{
		{"unknown topic", produceReq(1, "nope", 0, values("a")), kerr.UnknownTopicOrPartition.Code},
		{"unknown partition", produceReq(1, "t", 7, values("a")), kerr.UnknownTopicOrPartition.Code},
		{"too large", produceReq(1, "t", 0, values(string(make([]byte, 300)))),
			kerr.MessageTooLarge.Code},
		{"bad acks", produceReq(2, "t", 0, values("a")), kerr.InvalidRequiredAcks.Code},
		{"bad crc", produceReq(1, "t", 0, corrupt(values("a"))), kerr.CorruptMessage.Code},
		{"truncated", produceReq(1, "t", 0, values("abc")[:40]), kerr.CorruptMessage.Code},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.code, producePart(t, h.do(c.req)).ErrorCode)
		})
	}
	old := produceReq(1, "t", 0, nil)
	old.Version = 2
	require.Equal(t, kerr.UnsupportedVersion.Code, producePart(t, h.do(old)).ErrorCode)
	require.Equal(t, int64(0), h.b.replicas[tp("t", 0)].EndOffset(), "nothing bad was stored")
}

func corrupt(b []byte) []byte {
	b[len(b)-1] ^= 0xff
	return b
}

func TestProduceTimesOutWhenFsyncNeverCompletes(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.holdSyncs = true
	id := h.send(produceReq(-1, "t", 0, values("a")))
	h.advance(6 * time.Second)
	resp, ok := h.reply(id)
	require.True(t, ok)
	require.Equal(t, kerr.RequestTimedOut.Code, producePart(t, resp).ErrorCode)
}

func TestAcknowledgedWritesSurviveCrashAndUnsyncedOnesVanish(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	require.Zero(t, producePart(t, h.do(produceReq(-1, "t", 0, values("kept")))).ErrorCode)
	h.holdSyncs = true
	h.send(produceReq(1, "t", 0, values("lost")))
	h.crash()
	h.holdSyncs = false
	rep := h.b.replicas[tp("t", 0)]
	require.Equal(t, int64(1), rep.EndOffset())
	got := fetchValues(t, h, "t", 0, 0)
	require.Equal(t, []string{"kept"}, got)
}

func TestIdempotentRetryGetsOriginalOffset(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = maxVersion(kmsg.InitProducerID)
	ip := h.do(init).(*kmsg.InitProducerIDResponse)
	require.Zero(t, ip.ErrorCode)
	p := batch.Producer{ID: ip.ProducerID, Epoch: ip.ProducerEpoch, BaseSequence: 0}
	b := batch.Build([]batch.KV{{Value: []byte("x")}, {Value: []byte("y")}}, p, 1)
	retry := append([]byte(nil), b...)
	first := producePart(t, h.do(produceReq(-1, "t", 0, b)))
	require.Zero(t, first.ErrorCode)
	h.do(produceReq(-1, "t", 0, values("other")))
	again := producePart(t, h.do(produceReq(-1, "t", 0, retry)))
	require.Zero(t, again.ErrorCode)
	require.Equal(t, first.BaseOffset, again.BaseOffset)
	require.Equal(t, int64(3), h.b.replicas[tp("t", 0)].EndOffset())

	// Still a duplicate after a restart: producer state is rebuilt from the log.
	h.restart()
	again = producePart(t, h.do(produceReq(-1, "t", 0, append([]byte(nil), retry...))))
	require.Equal(t, first.BaseOffset, again.BaseOffset)
	gap := batch.Build([]batch.KV{{Value: []byte("z")}}, batch.Producer{ID: p.ID, Epoch: 0,
		BaseSequence: 9}, 1)
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code,
		producePart(t, h.do(produceReq(-1, "t", 0, gap))).ErrorCode)
}

func TestProducerIDsAreNeverReused(t *testing.T) {
	h := newHarness(t)
	seen := map[int64]bool{}
	for round := 0; round < 3; round++ {
		for i := 0; i < 5; i++ {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version = 0
			resp := h.do(req).(*kmsg.InitProducerIDResponse)
			require.Zero(t, resp.ErrorCode)
			require.False(t, seen[resp.ProducerID], "producer id %d handed out twice", resp.ProducerID)
			seen[resp.ProducerID] = true
		}
		h.crash()
	}
	txn := kmsg.NewPtrInitProducerIDRequest()
	txn.Version, txn.TransactionalID = maxVersion(kmsg.InitProducerID), kmsg.StringPtr("tx")
	require.NotZero(t, h.do(txn).(*kmsg.InitProducerIDResponse).ErrorCode)
}

func TestProduceAcksAllNeedsMinInsyncReplicas(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1, "min.insync.replicas=2")
	require.Equal(t, kerr.NotEnoughReplicas.Code,
		producePart(t, h.do(produceReq(-1, "t", 0, values("a")))).ErrorCode)
	require.Zero(t, producePart(t, h.do(produceReq(1, "t", 0, values("b")))).ErrorCode,
		"acks=1 does not need the in-sync replicas")
	require.Equal(t, int64(1), h.b.replicas[tp("t", 0)].EndOffset(), "the refused batch was not written")
}

// Switching a topic to log.flush.policy=never answers the acks=all writes that were
// waiting for an fsync: the high-water mark now covers them.
func TestProduceWaitsAnsweredWhenFlushPolicyBecomesNever(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.holdSyncs = true
	id := h.send(produceReq(-1, "t", 0, values("a")))
	h.alterConfigs(alterReq(2, false, acRes(kmsg.ConfigResourceTypeTopic, "t",
		"log.flush.policy", "never")))
	resp, ok := h.reply(id)
	require.True(t, ok, "the high-water mark covers the batch: acks=all is answered")
	require.Zero(t, producePart(t, resp).ErrorCode)
}

func TestProduceWaitsFailFastWhenAWriteTakesTheLogOffline(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.holdSyncs = true
	waiting := h.send(produceReq(-1, "t", 0, values("a")))
	log := h.env.logs[tp("t", 0)]
	log.AppendErr = fmt.Errorf("short write, truncate failed: %w", replica.ErrLogOffline)
	require.Equal(t, kerr.KafkaStorageError.Code,
		producePart(t, h.do(produceReq(-1, "t", 0, values("b")))).ErrorCode)
	resp, ok := h.reply(waiting)
	require.True(t, ok, "the earlier acks=all wait is answered at once")
	require.Equal(t, kerr.KafkaStorageError.Code, producePart(t, resp).ErrorCode)
}
