package replica

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// ReadResult is what a fetch of one partition sees.
type ReadResult struct {
	Err           int16
	Records       []byte // whole batches, possibly starting before the fetch offset
	HighWatermark int64
	StartOffset   int64
}

// Read returns batches from offset up to the high-water mark, at most maxBytes unless
// the first batch alone is larger (Kafka's KIP-74 rule, so a consumer never stalls on
// a large batch). Offsets in [HighWatermark, EndOffset] are valid and read as empty.
func (r *Replica) Read(offset int64, maxBytes int) ReadResult {
	res := ReadResult{HighWatermark: r.hwm, StartOffset: r.log.StartOffset()}
	if r.offline {
		r.hit(pReadOffline)
		res.Err = kerr.KafkaStorageError.Code
		return res
	}
	if offset < res.StartOffset || offset > r.log.EndOffset() {
		r.hit(pReadOutOfRange)
		res.Err = kerr.OffsetOutOfRange.Code
		return res
	}
	if offset >= r.hwm || maxBytes <= 0 {
		r.hit(pReadAtHighWatermark)
		return res
	}
	upTo := r.hwm
	if mutantOn("read-past-hwm") {
		upTo = r.log.EndOffset()
	}
	return r.readUpTo(res, offset, maxBytes, upTo)
}

// readUpTo fills res with the batches from offset to upTo (exclusive), at most maxBytes
// unless the first alone is larger.
func (r *Replica) readUpTo(res ReadResult, offset int64, maxBytes int, upTo int64) ReadResult {
	b, err := r.log.Read(offset, maxBytes, upTo)
	if err != nil {
		// As Kafka does on an IOException: the partition goes offline until a restart
		// recovers it. Nothing read is served, and a reader that needs every record
		// (the group coordinator replaying its offsets) sees the partition offline
		// rather than a silently shorter log.
		r.lg.Error("read failed", zap.Int64("offset", offset), zap.Error(err))
		r.hit(pReadFailed)
		r.goOffline()
		res.Err = kerr.KafkaStorageError.Code
		return res
	}
	res.Records = b
	return res
}

// DeleteRecordsBefore raises the log start offset to offset (-1: the high-water mark)
// and removes whole segments below it. It returns the new log start offset.
func (r *Replica) DeleteRecordsBefore(offset int64) (int64, int16) {
	if r.offline {
		return -1, kerr.KafkaStorageError.Code
	}
	if offset == -1 {
		r.hit(pDeleteRecordsHWM)
		offset = r.hwm
	}
	limit := r.hwm
	if mutantOn("delete-records-to-end") {
		limit = r.log.EndOffset()
	}
	if offset < 0 || offset > limit {
		r.hit(pDeleteRecordsRange)
		return -1, kerr.OffsetOutOfRange.Code
	}
	if mutantOn("delete-records-past") && offset < r.hwm {
		offset++
	}
	if offset > r.log.StartOffset() {
		if err := r.coverProducers(offset); err != nil {
			r.hit(pDeleteHeldForSnapshot)
			r.lg.Error("cannot save the producer state before moving the log start",
				zap.Int64("offset", offset), zap.Error(err))
			return -1, kerr.KafkaStorageError.Code
		}
		r.hit(pDeleteRecordsMoved)
		if err := r.log.SetStartOffset(offset); err != nil {
			r.lg.Error("cannot persist log start offset", zap.Error(err))
			return -1, kerr.KafkaStorageError.Code
		}
		if err := r.log.DeleteSegmentsBelow(offset); err != nil {
			r.lg.Warn("cannot delete segments below the new start", zap.Error(err))
		}
	}
	r.checkOffsets()
	return r.log.StartOffset(), 0
}

// SizeBytes is the size of the replica's log: the sum of its segments' sizes, the size
// retention.bytes bounds (Kafka's Log.size, which DescribeLogDirs answers).
func (r *Replica) SizeBytes() int64 { return sizeOf(r.log.Segments()) }

func sizeOf(segs []SegmentInfo) int64 {
	var total int64
	for _, s := range segs {
		total += s.SizeBytes
	}
	return total
}

// EnforceRetention deletes the oldest whole segments that are past retention.ms or
// beyond retention.bytes. The active segment is never deleted. It returns how many
// segments went. A compact-only topic (cleanup.policy=compact) deletes nothing.
func (r *Replica) EnforceRetention(nowMs int64) int {
	if r.offline || r.cfg.NoDelete {
		return 0
	}
	segs := r.log.Segments()
	if len(segs) < 2 {
		return 0
	}
	total := sizeOf(segs)
	cut, n := int64(-1), 0
	for _, s := range segs[:len(segs)-1] {
		retentionMs := r.cfg.RetentionMs
		if mutantOn("retention-seconds") {
			retentionMs /= 1000
		}
		expired := retentionMs >= 0 && s.MaxTimestamp >= 0 &&
			nowMs-s.MaxTimestamp > retentionMs
		oversize := r.cfg.RetentionBytes >= 0 && total-s.SizeBytes >= r.cfg.RetentionBytes
		if mutantOn("retention-bytes-total") {
			oversize = r.cfg.RetentionBytes >= 0 && total >= r.cfg.RetentionBytes
		}
		// Only data below the high-water mark may go: nothing not yet visible or not
		// yet durable is ever deleted.
		if !(expired || oversize) || (s.EndOffset > r.hwm && !mutantOn("retention-ignores-hwm")) {
			if expired || oversize {
				r.hit(pRetentionHeldByHWM)
			}
			break
		}
		if expired {
			r.hit(pRetentionTime)
		} else {
			r.hit(pRetentionBytes)
		}
		cut, total, n = s.EndOffset, total-s.SizeBytes, n+1
	}
	if n == 0 {
		return 0
	}
	if err := r.coverProducers(cut); err != nil {
		r.hit(pDeleteHeldForSnapshot)
		r.lg.Warn("retention waits: the producer state before the deletion was not saved",
			zap.Int64("offset", cut), zap.Error(err))
		return 0
	}
	if err := r.log.DeleteSegmentsBelow(cut); err != nil {
		r.lg.Warn("retention could not delete segments", zap.Error(err))
		return 0
	}
	r.lg.Info("retention deleted segments", zap.Int("segments", n),
		zap.Int64("log_start_offset", r.log.StartOffset()))
	r.checkOffsets()
	return n
}
