package replica

// ListOffsets by time, exact to the record as in Kafka. The log's time index narrows a
// lookup to one batch (the first whose max timestamp reaches the target); only that
// batch is decoded, and decompressed if need be, to find the record. Later batches are
// decoded only when no record of that one qualifies, which happens only when its
// qualifying records lie below the log start offset (DeleteRecords may cut a batch) or
// its header lies about its max timestamp. Only data below the high-water mark is
// searched, and no offset below the log start offset is ever answered.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/batch"
)

// TimestampMatch is one record found by time: its offset and its timestamp.
type TimestampMatch struct {
	Offset    int64
	Timestamp int64
}

// errStopScan ends a ScanHeaders early; it never leaves this file.
var errStopScan = errors.New("stop scan")

// maxBatchesDecoded bounds the batches one lookup by time decodes. With truthful
// headers it needs one, or two when DeleteRecords cut the first; more means batch
// headers claim timestamps their records do not carry (Sluice stores client headers as
// sent), and the lookup then settles for a batch's first offset.
const maxBatchesDecoded = 16

var errTooManyBatches = errors.New("too many batches claim the timestamp without a record carrying it")

// OffsetForTimestamp returns the first record, in offset order, whose timestamp is at
// or after ts, among the records in [StartOffset, HighWatermark). found is false when
// there is none. dec inflates compressed batches; if a batch cannot be decoded the
// answer falls back to that batch's first retained offset and its max timestamp.
func (r *Replica) OffsetForTimestamp(ts int64, dec batch.Decompressor) (m TimestampMatch,
	found bool, code int16) {
	if r.offline {
		return m, false, kerr.KafkaStorageError.Code
	}
	off, ok, err := r.log.OffsetForTimestamp(ts)
	start := r.log.StartOffset()
	// Each round moves past the batch it decoded, so the loop ends with the log; the
	// count bounds the work a log of lying headers can cause.
	for decoded := 0; err == nil && ok; off, ok, err = r.nextBatchReaching(off, ts) {
		var h batch.Header
		var b []byte
		if h, b, err = r.batchAt(max(off, start)); err != nil || b == nil {
			break
		}
		if decoded++; decoded > maxBatchesDecoded {
			return r.undecodable(&h, start, errTooManyBatches), true, 0
		}
		if h.MaxTimestamp >= ts {
			if m, found = r.firstRecordAtOrAfter(&h, b, ts, start, dec); found {
				r.hit(pTimestampFound)
				return m, true, 0
			}
		}
		off = h.NextOffset()
	}
	if err != nil {
		r.lg.Error("timestamp lookup failed", zap.Int64("timestamp", ts), zap.Error(err))
		return TimestampMatch{}, false, kerr.KafkaStorageError.Code
	}
	r.hit(pTimestampMissing)
	return TimestampMatch{}, false, 0
}

// MaxTimestamp returns the record with the largest timestamp, the earliest one among
// ties, as ListOffsets with timestamp -3 (MAX_TIMESTAMP) asks. As in Kafka, found is
// false when that record is not below the high-water mark yet.
func (r *Replica) MaxTimestamp(dec batch.Decompressor) (m TimestampMatch, found bool,
	code int16) {
	if r.offline {
		return m, false, kerr.KafkaStorageError.Code
	}
	_, off := r.log.MaxTimestamp()
	if off < 0 || off >= r.hwm {
		return m, false, 0
	}
	start := r.log.StartOffset()
	h, b, err := r.batchAt(max(off, start))
	if err == nil && b != nil && h.BaseOffset == off {
		if m, found = r.largestRecord(&h, b, start, dec); found && m.Timestamp == h.MaxTimestamp {
			return m, true, 0
		}
	}
	// The largest record lies below the log start offset (or the header lied): find
	// the largest retained one the slow way.
	if err == nil {
		m, found, err = r.scanLargest(start, dec)
	}
	if err != nil {
		r.lg.Error("max timestamp lookup failed", zap.Error(err))
		return TimestampMatch{}, false, kerr.KafkaStorageError.Code
	}
	return m, found, 0
}

// batchAt returns the visible batch holding offset (which must be >= StartOffset), or
// nil bytes when offset is not below the high-water mark.
func (r *Replica) batchAt(offset int64) (batch.Header, []byte, error) {
	if offset >= r.hwm {
		return batch.Header{}, nil, nil
	}
	b, err := r.log.Read(offset, 1, r.hwm)
	if err != nil || len(b) == 0 {
		return batch.Header{}, nil, err
	}
	h, err := batch.ParseHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.Size() > len(b) {
		return h, nil, fmt.Errorf("batch at %d: %w", h.BaseOffset, batch.ErrBadLength)
	}
	return h, b[:h.Size()], nil
}

// nextBatchReaching returns the base offset of the first visible batch at or after
// from whose max timestamp is at least ts.
func (r *Replica) nextBatchReaching(from, ts int64) (int64, bool, error) {
	off, found := int64(-1), false
	err := r.log.ScanHeaders(from, func(h batch.Header) error {
		if h.NextOffset() > r.hwm {
			return errStopScan
		}
		if h.BaseOffset >= from && h.MaxTimestamp >= ts {
			off, found = h.BaseOffset, true
			return errStopScan
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	return off, found, err
}

// firstRecordAtOrAfter finds the first record of the batch b at or after start whose
// timestamp is >= ts.
func (r *Replica) firstRecordAtOrAfter(h *batch.Header, b []byte, ts, start int64,
	dec batch.Decompressor) (m TimestampMatch, found bool) {
	err := batch.WalkTimestamps(b, dec, batch.MaxDecompressedBytes, func(rt batch.RecordTime) bool {
		if rt.Offset >= start && rt.Timestamp >= ts {
			m, found = TimestampMatch(rt), true
		}
		return !found
	})
	if err != nil {
		return r.undecodable(h, start, err), true
	}
	return m, found
}

// largestRecord finds the record of the batch b at or after start with the largest
// timestamp, the earliest among ties.
func (r *Replica) largestRecord(h *batch.Header, b []byte, start int64,
	dec batch.Decompressor) (m TimestampMatch, found bool) {
	err := batch.WalkTimestamps(b, dec, batch.MaxDecompressedBytes, func(rt batch.RecordTime) bool {
		if rt.Offset >= start && (!found || rt.Timestamp > m.Timestamp) {
			m, found = TimestampMatch(rt), true
		}
		return true
	})
	if err != nil {
		return r.undecodable(h, start, err), true
	}
	return m, found
}

// undecodable is the answer for a batch whose records cannot be read (a codec error or
// a zip bomb): its first retained offset and its max timestamp, as before exact lookups.
func (r *Replica) undecodable(h *batch.Header, start int64, err error) TimestampMatch {
	r.lg.Debug("cannot decode batch for a timestamp lookup; answering its base offset",
		zap.Int64("base_offset", h.BaseOffset), zap.Error(err))
	return TimestampMatch{Offset: max(h.BaseOffset, start), Timestamp: h.MaxTimestamp}
}

// scanLargest finds the largest retained record by reading every visible batch header
// from start: the batch holding start is decoded (DeleteRecords may have cut away its
// largest records), the rest are judged by their headers and the winner decoded.
func (r *Replica) scanLargest(start int64, dec batch.Decompressor) (best TimestampMatch,
	found bool, err error) {
	from := start
	h, b, err := r.batchAt(start)
	if err != nil || b == nil {
		return best, false, err
	}
	if h.BaseOffset < start {
		best, found = r.largestRecord(&h, b, start, dec)
		from = h.NextOffset()
	}
	var cand batch.Header
	haveCand, bar := false, int64(-1) // -1 is Kafka's "no timestamp"
	if found {
		bar = best.Timestamp
	}
	err = r.log.ScanHeaders(from, func(h batch.Header) error {
		if h.NextOffset() > r.hwm {
			return errStopScan
		}
		// Strictly larger: an earlier batch wins a tie.
		if h.BaseOffset >= from && h.MaxTimestamp > bar {
			cand, haveCand, bar = h, true, h.MaxTimestamp
		}
		return nil
	})
	if errors.Is(err, errStopScan) {
		err = nil
	}
	if err != nil || !haveCand {
		return best, found, err
	}
	if h, b, err = r.batchAt(cand.BaseOffset); err != nil || b == nil {
		return best, found, err
	}
	if m, ok := r.largestRecord(&h, b, start, dec); ok && (!found || m.Timestamp > best.Timestamp) {
		best, found = m, true
	}
	return best, found, nil
}
