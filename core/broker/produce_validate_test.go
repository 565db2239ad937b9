package broker

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/batch/batchtest"
)

func (h *harness) nowMs() int64 { return int64(h.now) / 1e6 }

// Every malformed-but-CRC-valid batch is refused with its code, at every Produce version
// we serve and with every acks; nothing of it is stored, and the next good batch gets the
// next offset.
func TestProduceRefusesMalformedBatches(t *testing.T) {
	h := newHarness(t)
	h.brokerOpts = []Option{WithDecompressor(stdGzip{})}
	h.restart()
	h.mustCreate("t", 1)
	rep := func() int64 { return h.b.replicas[tp("t", 0)].EndOffset() }
	next := int64(0)
	good := func() {
		t.Helper()
		p := producePart(t, h.do(produceReq(-1, "t", 0, values("a", "b"))))
		require.Zero(t, p.ErrorCode)
		require.Equal(t, next, p.BaseOffset)
		next += 2
	}
	good()
	for _, c := range batchtest.Malformed(h.nowMs()) {
		for _, v := range []int16{3, 7, 8, maxVersion(kmsg.Produce)} {
			for _, acks := range []int16{1, -1} {
				req := produceReq(acks, "t", 0, append([]byte(nil), c.Batch...))
				req.Version = v
				p := producePart(t, h.do(req))
				require.Equal(t, kerr.ErrorForCode(c.Code), kerr.ErrorForCode(p.ErrorCode),
					"%s (v%d, acks %d)", c.Name, v, acks)
				require.Equal(t, int64(-1), p.BaseOffset)
				require.Equal(t, next, rep(), "%s: the log did not grow", c.Name)
				if v >= 8 {
					require.NotNil(t, p.ErrorMessage, c.Name)
					require.Equal(t, c.PerRecord, len(p.ErrorRecords) > 0, "%s: %v",
						c.Name, p.ErrorRecords)
				} else {
					require.Empty(t, p.ErrorRecords, "v%d has no record errors", v)
				}
			}
		}
		good()
	}
	// acks=0: no answer at all, and still nothing stored.
	for _, c := range batchtest.Malformed(h.nowMs()) {
		h.send(produceReq(0, "t", 0, append([]byte(nil), c.Batch...)))
		h.settle()
		require.Equal(t, next, rep(), c.Name)
	}
	good()
}

// The four cases, as reported: each was accepted before validation existed.
func TestProduceRefusesTheReportedBatches(t *testing.T) {
	h := newHarness(t)
	h.brokerOpts = []Option{WithDecompressor(stdGzip{})}
	h.restart()
	h.mustCreate("t", 1)
	want := map[string]bool{"phantom records": true, "gzip flag without gzip": true,
		"value past the batch end": true, "offset deltas 3, 0": true}
	for _, c := range batchtest.Malformed(h.nowMs()) {
		if !want[c.Name] {
			continue
		}
		delete(want, c.Name)
		p := producePart(t, h.do(produceReq(1, "t", 0, c.Batch)))
		require.Equal(t, kerr.InvalidRecord.Code, p.ErrorCode, c.Name)
	}
	require.Empty(t, want)
	require.Zero(t, h.b.replicas[tp("t", 0)].EndOffset())
}

func TestProduceTimestampSettings(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("old", 1, "message.timestamp.before.max.ms=60000")
	h.mustCreate("stamp", 1, "message.timestamp.type=LogAppendTime")
	h.mustCreate("any", 1, "message.timestamp.after.max.ms=9223372036854775807")
	now := h.nowMs()
	stale := timedBatch(t, batch.CompressionNone, now, now-60_001, now-1)
	p := producePart(t, h.do(produceReq(1, "old", 0, stale)))
	require.Equal(t, kerr.InvalidTimestamp.Code, p.ErrorCode)
	require.Len(t, p.ErrorRecords, 1)
	require.Equal(t, int32(1), p.ErrorRecords[0].RelativeOffset)
	require.Zero(t, producePart(t, h.do(produceReq(1, "old", 0,
		timedBatch(t, batch.CompressionNone, now-60_000)))).ErrorCode)

	ahead := timedBatch(t, batch.CompressionNone, now+3_600_001)
	require.Equal(t, kerr.InvalidTimestamp.Code,
		producePart(t, h.do(produceReq(1, "old", 0, ahead))).ErrorCode,
		"message.timestamp.after.max.ms defaults to one hour")
	require.Zero(t, producePart(t, h.do(produceReq(1, "stamp", 0, ahead))).ErrorCode,
		"LogAppendTime topics ignore producer timestamps")
	require.Zero(t, producePart(t, h.do(produceReq(1, "any", 0, ahead))).ErrorCode)
}

// A CreateTime batch whose header's max timestamp disagrees with its records is stored
// with the records' max, as Kafka rewrites it.
func TestProduceRewritesTheMaxTimestamp(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	now := h.nowMs()
	b := timedBatch(t, batch.CompressionNone, now-10, now-5)
	binary.BigEndian.PutUint64(b[35:], uint64(now+1000))
	batchtest.FixCRC(b)
	require.Zero(t, producePart(t, h.do(produceReq(1, "t", 0, b))).ErrorCode)
	h.settle()
	r := h.b.replicas[tp("t", 0)].Read(0, 1<<20)
	require.Zero(t, r.Err)
	hd, err := batch.Check(r.Records)
	require.NoError(t, err)
	require.Equal(t, now-5, hd.MaxTimestamp)
}
