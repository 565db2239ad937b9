package replica

import (
	"errors"

	"github.com/sluicemq/sluice/core/batch"
)

// Log is the replica's view of one partition's on-disk log: a directory of segments of
// record batches. disk.PartitionLog implements it for real files and for the simulator's
// crashable in-memory filesystem.
//
// Calls are synchronous and happen on the actor's thread, except Sync, which a driver
// calls on behalf of a SyncLog effect (possibly on another goroutine: implementations
// must allow Sync to run concurrently with the other methods). Appended bytes are
// durable only once a Sync that started after the append has returned nil.
//
// Offsets: StartOffset <= every retained offset < EndOffset. EndOffset is the log end
// offset (LEO), the offset the next appended batch will get.
type Log interface {
	// StartOffset is the log start offset: the first offset a reader may fetch.
	StartOffset() int64
	// EndOffset is the offset the next batch will be assigned.
	EndOffset() int64

	// Append writes one batch whose header has already been rewritten with its base
	// offset, which must equal EndOffset(). It rolls to a new segment first when the
	// active one is full (segment.bytes) or old (segment.ms, measured from nowMs). On error
	// the log is unchanged: the implementation truncates any partial write, or reports
	// ErrLogOffline from then on if it cannot.
	Append(nowMs int64, h batch.Header, b []byte) error

	// Read returns whole batches: the batch containing offset first, then following
	// batches while the total stays within maxBytes, never including a batch that ends
	// beyond upTo (an exclusive offset bound, e.g. the high-water mark). The first batch
	// is returned even when larger than maxBytes. offset must be within
	// [StartOffset, EndOffset); the result may begin before offset.
	Read(offset int64, maxBytes int, upTo int64) ([]byte, error)

	// OffsetForTimestamp returns the base offset of the first batch whose max timestamp
	// is >= ts, and false when there is none.
	OffsetForTimestamp(ts int64) (int64, bool, error)

	// MaxTimestamp returns the largest max timestamp in the log and the base offset of
	// the batch carrying it (-1, -1 when empty).
	MaxTimestamp() (ts int64, offset int64)

	// Segments lists the segments oldest first; the last is the active one.
	Segments() []SegmentInfo

	// DeleteSegmentsBelow removes every whole segment whose end offset is <= offset, never
	// the active segment, and raises the start offset to the base of the first remaining
	// segment if that is higher. The change is durable when it returns.
	DeleteSegmentsBelow(offset int64) error

	// TruncateTo removes every batch holding an offset at or after offset and returns
	// the new end offset: offset at a batch boundary, else the base of the batch holding
	// it. A follower truncates a tail that diverged from its leader's log. offset must
	// not be below StartOffset nor cut the batch holding it (an error otherwise). On
	// return the cut and everything below the new end are durable.
	TruncateTo(offset int64) (int64, error)

	// ResetTo empties the log and starts it over at offset (Kafka's
	// truncateFullyAndStartAt): a follower behind its leader's log start restarts
	// there, one whose log diverges from its leader's below its own start restarts at
	// the divergence point (offset below EndOffset, maybe below StartOffset). Producer
	// snapshots go with the records. On return the log is empty at offset, durably; a
	// crash part way leaves the old log (or a suffix of it, under its old start) or an
	// empty one, at offset or, below the old end, at the old start.
	ResetTo(offset int64, nowMs int64) error

	// SetStartOffset raises the log start offset (DeleteRecords) durably. It may only
	// move forward and never past EndOffset.
	SetStartOffset(offset int64) error

	// ScanHeaders calls fn with the header of every batch from the one containing from
	// to the end, oldest first (recovery of producer state).
	ScanHeaders(from int64, fn func(h batch.Header) error) error

	// Sync makes every byte appended so far durable. It fails if the log went offline
	// before it returned (its fsyncs may cover bytes the log dropped meanwhile).
	Sync() error

	// SaveSnapshot durably stores an opaque snapshot of replica state taken at offset;
	// LoadSnapshot returns the newest one whose offset is <= EndOffset (found=false when
	// none), LoadSnapshotAtMost the newest at or below limit too. A log keeps a few of
	// the newest snapshots and, always, the newest at or below its start offset: the
	// one that describes the batches retention and DeleteRecords removed.
	SaveSnapshot(offset int64, data []byte) error
	LoadSnapshot() (offset int64, data []byte, found bool, err error)
	LoadSnapshotAtMost(limit int64) (offset int64, data []byte, found bool, err error)

	// SaveLeaderEpochs durably stores the replica's encoded leader-epoch cache;
	// LoadLeaderEpochs returns it (found=false when none was stored).
	SaveLeaderEpochs(data []byte) error
	LoadLeaderEpochs() (data []byte, found bool, err error)

	// Configure applies segment.bytes and segment.ms from a config change.
	Configure(c SegmentConfig)

	// Close releases the files. It does not sync.
	Close() error
}

// SegmentConfig is what the log itself needs from the topic configuration.
type SegmentConfig struct {
	SegmentBytes  int64 // roll when the active segment would exceed this
	SegmentMs     int64 // roll when the active segment's first batch is older than this
	IndexInterval int   // bytes between sparse index entries
	// TopicID is the topic's id (zero: unknown). A log opened for another id is the
	// leftover of a deleted topic of the same name whose removal failed: the open
	// removes it first, so a re-created topic never serves its predecessor's records.
	TopicID [16]byte
}

// SegmentInfo describes one segment for retention decisions.
type SegmentInfo struct {
	BaseOffset   int64
	EndOffset    int64 // exclusive: the offset after its last batch
	SizeBytes    int64
	MaxTimestamp int64 // -1 when empty
	CreatedMs    int64 // wall time the segment was rolled in (for segment.ms)
}

// ErrLogOffline is wrapped by Log errors after a failure the log could not undo (a failed
// fsync, or a failed truncation after a failed write). The replica then refuses reads and
// writes with KAFKA_STORAGE_ERROR until the node restarts and recovery runs.
var ErrLogOffline = errors.New("log offline after an unrecoverable I/O error")
