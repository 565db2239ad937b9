package broker

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
)

// stdGzip is a Decompressor for gzip only, on the standard library, so these tests do
// not depend on package compress (which has its own tests for every codec).
type stdGzip struct{}

func (stdGzip) Decompress(codec int8, src []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if len(out) > limit {
		return nil, batch.ErrDecompressedTooLarge
	}
	return out, err
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	err := w.Close()
	return buf.Bytes(), err
}

// timedBatch builds a batch whose records carry the given timestamps, one each.
func timedBatch(t *testing.T, codec int, ts ...int64) []byte {
	t.Helper()
	recs := make([]batch.TimedKV, len(ts))
	for i, v := range ts {
		recs[i] = batch.TimedKV{Value: []byte("v"), TimestampMs: v}
	}
	b, err := batch.BuildTimed(recs, codec, gzipBytes)
	require.NoError(t, err)
	return b
}

func listOffset(h *harness, topic string, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = maxVersion(kmsg.ListOffsets)
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	p := h.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	require.Zero(h.t, p.ErrorCode)
	return p
}

// requireFound checks the offset and timestamp ListOffsets answered for ts.
func requireFound(t *testing.T, h *harness, topic string, ts, wantOff, wantTs int64) {
	t.Helper()
	p := listOffset(h, topic, ts)
	require.Equal(t, [2]int64{wantOff, wantTs}, [2]int64{p.Offset, p.Timestamp},
		"ListOffsets(%d): (offset, timestamp)", ts)
}

func deleteRecords(t *testing.T, h *harness, topic string, before int64) {
	t.Helper()
	del := kmsg.NewPtrDeleteRecordsRequest()
	del.Version = maxVersion(kmsg.DeleteRecords)
	dt := kmsg.NewDeleteRecordsRequestTopic()
	dt.Topic = topic
	dp := kmsg.NewDeleteRecordsRequestTopicPartition()
	dp.Partition, dp.Offset = 0, before
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	dr := h.do(del).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
	require.Zero(t, dr.ErrorCode)
	require.Equal(t, before, dr.LowWatermark)
}

func produceOK(t *testing.T, h *harness, topic string, b []byte) {
	t.Helper()
	p := producePart(t, h.do(produceReq(-1, topic, 0, b)))
	require.Zero(t, p.ErrorCode)
}

func TestListOffsetsFindsTheRecordInsideABatch(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	produceOK(t, h, "t", timedBatch(t, batch.CompressionNone, 1000, 900, 1300, 1200)) // 0-3
	produceOK(t, h, "t", timedBatch(t, batch.CompressionNone, 1100, 1500, 1400))      // 4-6
	produceOK(t, h, "t", timedBatch(t, batch.CompressionNone, 1500))                  // 7

	requireFound(t, h, "t", 0, 0, 1000)
	requireFound(t, h, "t", 1000, 0, 1000)
	requireFound(t, h, "t", 1001, 2, 1300) // not 0, the batch's base offset
	requireFound(t, h, "t", 1250, 2, 1300)
	requireFound(t, h, "t", 1301, 5, 1500) // the first batch has none; 1100 at 4 is too early
	requireFound(t, h, "t", 1501, -1, -1)
	requireFound(t, h, "t", -3, 5, 1500) // the largest timestamp, earliest of the ties

	// DeleteRecords cuts the first batch: its records below 3 are gone.
	deleteRecords(t, h, "t", 3)
	requireFound(t, h, "t", 0, 3, 1200)
	requireFound(t, h, "t", 1001, 3, 1200)
	requireFound(t, h, "t", 1250, 5, 1500)
	h.restart()
	requireFound(t, h, "t", 1001, 3, 1200)
}

func TestListOffsetsMaxTimestampIgnoresDeletedRecords(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	produceOK(t, h, "t", timedBatch(t, batch.CompressionNone, 2000, 100, 100)) // 0-2
	produceOK(t, h, "t", timedBatch(t, batch.CompressionNone, 500, 600))       // 3-4
	produceOK(t, h, "t", timedBatch(t, batch.CompressionNone, 600))            // 5: a tie
	requireFound(t, h, "t", -3, 0, 2000)
	deleteRecords(t, h, "t", 1)
	requireFound(t, h, "t", -3, 4, 600) // not the deleted 2000, and the earlier of the ties
	requireFound(t, h, "t", 1000, -1, -1)

	// The cut batch's largest retained record beats a later tie.
	h.mustCreate("u", 1)
	produceOK(t, h, "u", timedBatch(t, batch.CompressionNone, 2000, 100, 700)) // 0-2
	produceOK(t, h, "u", timedBatch(t, batch.CompressionNone, 700))            // 3
	deleteRecords(t, h, "u", 1)
	requireFound(t, h, "u", -3, 2, 700)
	deleteRecords(t, h, "u", 3)
	requireFound(t, h, "u", -3, 3, 700)
}

func TestListOffsetsSearchesOnlyBelowTheHighWatermark(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1, "log.flush.policy=always")
	produceOK(t, h, "t", timedBatch(t, batch.CompressionNone, 100, 200))
	h.holdSyncs = true
	h.send(produceReq(1, "t", 0, timedBatch(t, batch.CompressionNone, 300, 400)))
	requireFound(t, h, "t", 250, -1, -1)
	requireFound(t, h, "t", -3, -1, -1) // as in Kafka: the largest is not visible yet
	requireFound(t, h, "t", 150, 1, 200)
	h.holdSyncs = false
	h.settle()
	requireFound(t, h, "t", 250, 2, 300)
	requireFound(t, h, "t", -3, 3, 400)
}

func TestListOffsetsLogAppendTime(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1, "message.timestamp.type=LogAppendTime")
	produceOK(t, h, "t", timedBatch(t, batch.CompressionNone, 5, 9, 7))
	now := int64(h.now) / 1e6
	requireFound(t, h, "t", 0, 0, now) // every record carries the append time
	requireFound(t, h, "t", -3, 0, now)
	requireFound(t, h, "t", now+1, -1, -1)
}

func TestListOffsetsLooksInsideCompressedBatches(t *testing.T) {
	h := newHarness(t)
	h.brokerOpts = []Option{WithDecompressor(stdGzip{})}
	h.restart()
	h.mustCreate("t", 1)
	produceOK(t, h, "t", timedBatch(t, batch.CompressionGzip, 10, 50, 30, 40)) // 0-3
	requireFound(t, h, "t", 31, 1, 50)
	requireFound(t, h, "t", -3, 1, 50)
	deleteRecords(t, h, "t", 2)
	requireFound(t, h, "t", 31, 3, 40)
	requireFound(t, h, "t", -3, 3, 40)
}

// Without a decompressor, or with a payload that will not inflate, a lookup answers the
// batch's first retained offset and its max timestamp: a usable position, no panic.
func TestListOffsetsUndecodableBatchFallsBackToItsBase(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	produceOK(t, h, "t", timedBatch(t, batch.CompressionNone, 1, 2)) // 0-1
	p := producePart(t, h.do(produceReq(-1, "t", 0, timedBatch(t, batch.CompressionGzip, 1))))
	require.Equal(t, kerr.UnsupportedCompressionType.Code, p.ErrorCode,
		"without a decompressor, produce cannot validate a compressed batch")
	storeUnchecked(t, h, "t", timedBatch(t, batch.CompressionGzip, 10, 50, 30)) // 2-4
	requireFound(t, h, "t", 31, 2, 50)

	h.brokerOpts = []Option{WithDecompressor(stdGzip{})}
	h.restart()
	requireFound(t, h, "t", 31, 3, 50)
	recs := []batch.TimedKV{{Value: []byte("x"), TimestampMs: 100}, {TimestampMs: 200}}
	garbage, err := batch.BuildTimed(recs, batch.CompressionGzip, func(b []byte) ([]byte, error) {
		return []byte("not gzip at all"), nil
	})
	require.NoError(t, err)
	p = producePart(t, h.do(produceReq(-1, "t", 0, garbage)))
	require.Equal(t, kerr.InvalidRecord.Code, p.ErrorCode, "produce validates the records")
	// Data stored before produce validated records may still hold such a batch.
	storeUnchecked(t, h, "t", garbage) // 5-6: the CRC is right, the payload is not
	requireFound(t, h, "t", 150, 5, 200)
	requireFound(t, h, "t", -3, 5, 200)
}

// storeUnchecked appends b to partition 0 of topic straight into its log, past
// produce's validation, as data written before produce validated records may be, then
// restarts the broker so that the replica sees it.
func storeUnchecked(t *testing.T, h *harness, topic string, bs ...[]byte) {
	t.Helper()
	l := h.env.logs[tp(topic, 0)]
	for _, b := range bs {
		b = append([]byte(nil), b...)
		batch.SetBaseOffset(b, l.EndOffset())
		hd, err := batch.Check(b)
		require.NoError(t, err)
		require.NoError(t, l.Append(int64(h.now)/1e6, hd, b))
	}
	require.NoError(t, l.Sync())
	h.restart()
}

// lyingBatch is a batch whose header claims a max timestamp none of its records has.
// Produce rewrites such a header (as Kafka does); older data may still hold one.
func lyingBatch(t *testing.T, claimedMax int64, ts ...int64) []byte {
	t.Helper()
	b := timedBatch(t, batch.CompressionNone, ts...)
	binary.BigEndian.PutUint64(b[35:], uint64(claimedMax))
	binary.BigEndian.PutUint32(b[17:], batch.ComputeCRC(b))
	return b
}

func TestListOffsetsSurvivesLyingBatchHeaders(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	storeUnchecked(t, h, "t", lyingBatch(t, 1000, 10, 20))              // 0-1
	produceOK(t, h, "t", timedBatch(t, batch.CompressionNone, 30, 500)) // 2-3
	requireFound(t, h, "t", 100, 3, 500)                                // the lying batch is passed over
	requireFound(t, h, "t", 501, -1, -1)

	// Many lying batches: the lookup stops decoding and settles for a batch's start.
	h.mustCreate("u", 1)
	lies := make([][]byte, 40)
	for i := range lies {
		lies[i] = lyingBatch(t, 1000, 10)
	}
	storeUnchecked(t, h, "u", lies...)
	produceOK(t, h, "u", timedBatch(t, batch.CompressionNone, 900))
	p := listOffset(h, "u", 100)
	require.Equal(t, int64(16), p.Offset, "the 17th lying batch, after 16 decoded in vain")
}
