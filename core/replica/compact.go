package replica

import (
	"errors"
	"math"
)

// ErrCleanAborted is a clean that stopped because the log changed under it (closed,
// offline, truncated, a segment removed): what was swapped in stays, nothing is wrong.
var ErrCleanAborted = errors.New("clean aborted: the log changed")

// Log compaction (cleanup.policy=compact): the replica decides when a partition is worth
// cleaning and what range; the cleaning itself (reading closed segments, building the
// key map, writing and swapping in the cleaned segments) is done by the log, off the
// broker's thread, through the Cleaner interface (docs/storage.md, "Compaction").

// CompactConfig is a compacted topic's cleaner settings.
type CompactConfig struct {
	// Enabled: cleanup.policy includes compact.
	Enabled bool
	// MinLagMs is min.compaction.lag.ms: a segment holding a record younger than this
	// (by its max timestamp) is not cleaned.
	MinLagMs int64
	// MaxLagMs is max.compaction.lag.ms: a dirty segment older than this is cleaned
	// whatever the dirty ratio.
	MaxLagMs int64
	// MinDirtyRatio is min.cleanable.dirty.ratio: the dirty share of the cleanable bytes
	// past which the partition is cleaned.
	MinDirtyRatio float64
	// DeleteRetentionMs is delete.retention.ms: how long a tombstone outlives the
	// records it deletes.
	DeleteRetentionMs int64
}

// CleanRequest asks a log to clean its closed segments below UpTo.
type CleanRequest struct {
	// DirtyStart is the first offset not covered by the last completed clean (the log
	// start when unknown): the key map is built from it to UpTo.
	DirtyStart int64
	// UpTo is the end offset of the last segment to clean; it is at most the base of the
	// active segment and at most the high-water mark.
	UpTo int64
	// NowMs is the time tombstones are judged by: one whose batch's max timestamp is
	// older than NowMs - DeleteRetentionMs is removed.
	NowMs             int64
	DeleteRetentionMs int64
	// KeyMapBytes bounds the key map (log.cleaner.dedupe.buffer.size).
	KeyMapBytes int64
	// IOBytesPerSec bounds the cleaner's reads plus writes
	// (log.cleaner.io.max.bytes.per.second); <= 0 or +Inf: unbounded. The driver
	// enforces it; the log only reports the bytes.
	IOBytesPerSec float64
}

// CleanResult reports one clean.
type CleanResult struct {
	// CleanedTo is the offset the key map reached: the next clean's DirtyStart. It is
	// below UpTo when the key map filled up.
	CleanedTo      int64
	Segments       int   // segments rewritten and swapped in
	BytesRead      int64 // segment bytes read
	BytesBefore    int64 // size of the swapped segments before
	BytesAfter     int64 // and after
	RecordsRemoved int64
}

// Cleaner is implemented by logs that can compact themselves (disk.PartitionLog).
// Clean runs on a worker, concurrently with the log's other methods, and swaps each
// cleaned segment in under the log's lock; the active segment is never touched.
type Cleaner interface {
	Clean(req CleanRequest) (CleanResult, error)
}

// PlanClean says whether the partition should be cleaned now and what range. dirtyStart
// is where the last clean's key map ended (0 when unknown). Only closed segments wholly
// below the high-water mark whose max timestamp is at least MinLagMs old are cleanable;
// they are cleaned when their dirty share is past MinDirtyRatio or a dirty one was
// created (its first batch appended) longer than MaxLagMs ago.
func (r *Replica) PlanClean(nowMs, dirtyStart int64) (CleanRequest, bool) {
	c := r.cfg.Compact
	if !c.Enabled || r.offline {
		return CleanRequest{}, false
	}
	if _, ok := r.log.(Cleaner); !ok {
		return CleanRequest{}, false
	}
	segs := r.log.Segments()
	start := r.log.StartOffset()
	dirtyStart = max(dirtyStart, start)
	var upTo, total, dirty int64 = -1, 0, 0
	overdue := false
	for _, s := range segs[:len(segs)-1] {
		if s.EndOffset <= start {
			continue
		}
		if s.EndOffset > r.hwm || (s.MaxTimestamp >= 0 && nowMs-s.MaxTimestamp < c.MinLagMs) {
			break
		}
		upTo = s.EndOffset
		total += s.SizeBytes
		if s.EndOffset > dirtyStart {
			dirty += s.SizeBytes
			if c.MaxLagMs < math.MaxInt64 && nowMs-s.CreatedMs > c.MaxLagMs {
				overdue = true
			}
		}
	}
	if upTo < 0 || dirty == 0 || total == 0 {
		return CleanRequest{}, false
	}
	// Strictly past the ratio, as Kafka's cleaner chooses a log: a ratio of 1 cleans
	// only what max.compaction.lag.ms forces.
	if !overdue && float64(dirty)/float64(total) <= c.MinDirtyRatio {
		return CleanRequest{}, false
	}
	return CleanRequest{DirtyStart: dirtyStart, UpTo: upTo, NowMs: nowMs,
		DeleteRetentionMs: c.DeleteRetentionMs}, true
}

// Compacted reports whether the topic's cleanup.policy includes compact.
func (r *Replica) Compacted() bool { return r.cfg.Compact.Enabled }
