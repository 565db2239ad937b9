package replica

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/probe"
)

// Config is what a replica needs from its topic's configuration.
type Config struct {
	Segment         SegmentConfig
	RetentionMs     int64 // -1: unbounded
	RetentionBytes  int64 // -1: unbounded
	MaxMessageBytes int
	// FlushAlways: the high-water mark only covers fsynced data, so acks=all answers and
	// reads never claim more than would survive a crash (log.flush.policy=always).
	FlushAlways   bool
	LogAppendTime bool
	// MinInsyncReplicas is min.insync.replicas: acks=all needs at least this many
	// replicas in sync. A single-node partition has one.
	MinInsyncReplicas int
	// TimestampBeforeMaxMs and TimestampAfterMaxMs are message.timestamp.before.max.ms
	// and message.timestamp.after.max.ms: how far a CreateTime record's timestamp may
	// lie before or after the broker's clock.
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
	// Decompressor inflates compressed batches so that their records are validated on
	// produce; nil refuses compressed batches (UNSUPPORTED_COMPRESSION_TYPE).
	Decompressor batch.Decompressor
	// Probes counts the code probes this replica passes (nil: none; package probe).
	Probes *probe.Set
	// SnapshotEveryBatches is how many durable batches pass between producer-state
	// snapshots (sluice.producer.snapshot.interval.batches; 0: DefaultSnapshotEveryBatches).
	// Recovery rescans at most this many batch headers after the last snapshot.
	SnapshotEveryBatches int
	// Compact is the topic's compaction (cleanup.policy includes compact; compact.go).
	Compact CompactConfig
	// NoDelete: cleanup.policy does not include delete, so retention.ms and
	// retention.bytes delete nothing (a compact-only topic).
	NoDelete bool
}

// refusalLogEveryMs spaces the info lines about refused batches of one partition: a
// client that keeps sending bad batches is told so in every response, but cannot
// flood the log.
const refusalLogEveryMs = 60_000

// DefaultSnapshotEveryBatches is the default of Config.SnapshotEveryBatches: how many
// durable batches pass between producer-state snapshots.
const DefaultSnapshotEveryBatches = 20_000

// Replica is the leader replica of one partition.
//
// Offsets, lowest to highest (invariant R1):
//
//	StartOffset <= HighWatermark <= EndOffset, and with FlushAlways
//	HighWatermark == durable (the end of the last completed sync).
type Replica struct {
	tp          core.TopicPartition
	incarnation uint64
	log         Log
	cfg         Config
	lg          *zap.Logger

	hwm          int64 // high-water mark: readers and acks=all see offsets below it
	durable      int64 // offsets below it survived a completed Sync
	syncInFlight bool
	syncTarget   int64 // EndOffset when the in-flight sync was requested
	offline      bool  // an I/O error we cannot undo: refuse everything until restart
	// visibleUnsynced is the high-water mark when the topic last switched from
	// log.flush.policy=never to always: data below it was already visible unsynced.
	visibleUnsynced int64

	// leaderEpoch is stamped into every batch this replica appends; epochs records
	// where each epoch began (epochs.go).
	leaderEpoch int32
	epochs      epochCache
	epochsDirty bool // epochs changed since last stored
	follower    bool // follows another replica (follower.go): HWM from the leader only
	// hwmRecovered: the high-water mark is the recovered log's end, right for a replica
	// that leads alone but unknown in a replicated partition; the first role change
	// forgets it (forgetRecoveredHighWatermark).
	hwmRecovered bool

	producers     map[int64]*producerEntry
	snapOffset    int64 // offset of the last saved producer snapshot
	sinceSnapshot int   // batches appended since then

	bytesAppended int64 // running total of appended batch bytes
	// visibleBytes is bytesAppended as of the high-water mark (the bytes below it), for
	// fetch MinBytes accounting: a parked fetch wakes when data becomes visible, which
	// with FlushAlways is at the fsync, not at the append.
	visibleBytes int64
	marks        []byteMark // bytesAppended at past log ends above the HWM (isr.go)

	// isr holds the followers in the in-sync replica set and what each replicated;
	// replicated, what every follower last reported (isr.go). Empty on a single node.
	isr        map[int32]int64
	replicated map[int32]int64
	fetchState map[int32]*followerFetchState // followers' fetches, for ISR changes (lag.go)

	fresh freshAppend // the last batch appended, until the broker's ForgetFresh (fresh.go)

	refusalLoggedMs int64 // when a refused batch was last logged at info
	refusalsQuiet   int   // refusals since then, logged at debug only
}

// New recovers a replica over an opened log: it makes what recovery found durable,
// rebuilds the producer table from the last snapshot plus the batches after it, and
// sets the high-water mark to the end of the log.
func New(tp core.TopicPartition, incarnation uint64, log Log, cfg Config,
	lg *zap.Logger) (*Replica, error) {
	r := &Replica{tp: tp, incarnation: incarnation, log: log, cfg: cfg,
		lg: lg.With(zap.Stringer("tp", tp)), producers: map[int64]*producerEntry{}}
	// What recovery read back may still sit only in the page cache (the process died,
	// the machine did not). Sync it before anyone may read or rely on it.
	if err := log.Sync(); err != nil {
		return nil, fmt.Errorf("sync recovered log of %s: %w", tp, err)
	}
	if err := r.recoverProducers(); err != nil {
		return nil, err
	}
	if err := r.loadEpochs(); err != nil {
		return nil, err
	}
	r.leadFrom(log.EndOffset())
	r.durable = log.EndOffset()
	r.hwm = r.durable
	r.hwmRecovered = true
	r.checkOffsets()
	return r, nil
}

func (r *Replica) recoverProducers() error {
	from := r.log.StartOffset()
	off, data, found, err := r.log.LoadSnapshot()
	if err != nil {
		return fmt.Errorf("load producer snapshot of %s: %w", r.tp, err)
	}
	if found && off >= from && off <= r.log.EndOffset() {
		if r.producers, err = decodeProducers(data); err != nil {
			return fmt.Errorf("decode producer snapshot of %s: %w", r.tp, err)
		}
		from, r.snapOffset = off, off
		r.hit(pRecoverFromSnapshot)
	}
	if from >= r.log.EndOffset() || (found && mutantOn("snapshot-only-recovery")) {
		return nil
	}
	return r.replayAll(r.producers, from)
}

// checkOffsets asserts invariant R1.
func (r *Replica) checkOffsets() {
	start, end := r.log.StartOffset(), r.log.EndOffset()
	core.Invariant(start <= r.hwm && r.hwm <= end, "R1",
		"%s: start %d, hwm %d, end %d", r.tp, start, r.hwm, end)
	core.Invariant(!r.cfg.FlushAlways || r.hwm <= max(r.durable, r.visibleUnsynced), "R1",
		"%s: hwm %d beyond durable %d", r.tp, r.hwm, r.durable)
}

// checkReadBack reads the batch just appended at base back from the log and requires
// the very bytes written (invariant R5): data is checked right after it is written, so
// a storage bug shows up at the write that caused it, not at a reader much later.
func (r *Replica) checkReadBack(base int64, want []byte) {
	got, err := r.log.Read(base, len(want), r.log.EndOffset())
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) || errors.Is(err, ErrLogOffline) {
		// The disk failed the read (an injected fault), or the log found bytes rotten
		// at rest on the way and went offline: not the log's logic.
		return
	}
	core.Invariant(err == nil, "R5", "%s: reading back offset %d: %v", r.tp, base, err)
	core.Invariant(len(got) >= len(want) && string(got[:len(want)]) == string(want), "R5",
		"%s: the batch at %d reads back different from what was written", r.tp, base)
	_, err = batch.CheckRecords(got[:len(want)], r.cfg.Decompressor, 0)
	core.Invariant(err == nil || errors.Is(err, batch.ErrNoDecompressor), "R7",
		"%s: the batch stored at %d does not decode: %v", r.tp, base, err)
	segs := r.log.Segments()
	for i := 1; i < len(segs); i++ {
		core.Invariant(segs[i].BaseOffset == segs[i-1].EndOffset, "R6",
			"%s: segment %d starts at %d, after one ending at %d", r.tp, i,
			segs[i].BaseOffset, segs[i-1].EndOffset)
	}
	core.Invariant(len(segs) > 0 && segs[len(segs)-1].EndOffset == r.log.EndOffset(), "R6",
		"%s: the last segment does not end at the log end", r.tp)
}

// Configure applies a topic config change.
func (r *Replica) Configure(cfg Config) {
	if cfg.FlushAlways && !r.cfg.FlushAlways {
		r.visibleUnsynced = r.hwm
	}
	r.cfg = cfg
	r.log.Configure(cfg.Segment)
	if !cfg.FlushAlways {
		r.advanceHighWatermark()
	}
}

// Close closes the log; the replica is unusable afterwards.
func (r *Replica) Close() { _ = r.log.Close() }

// Incarnation distinguishes this replica from an earlier one of a recreated topic.
func (r *Replica) Incarnation() uint64 { return r.incarnation }

// Log returns the replica's log, for the driver's sync effect.
func (r *Replica) Log() Log { return r.log }

// StartOffset is the log start offset.
func (r *Replica) StartOffset() int64 { return r.log.StartOffset() }

// EndOffset is the log end offset.
func (r *Replica) EndOffset() int64 { return r.log.EndOffset() }

// DurableEnd is the offset below which this replica's own log is durable (fsynced);
// with log.flush.policy=never, the log end. It says nothing of the followers.
func (r *Replica) DurableEnd() int64 {
	if !r.cfg.FlushAlways {
		return r.log.EndOffset()
	}
	return r.durable
}

// HighWatermark is the end of what readers may see.
func (r *Replica) HighWatermark() int64 { return r.hwm }

// EnoughInSync reports whether acks=all may be accepted (min.insync.replicas).
func (r *Replica) EnoughInSync() bool { return r.InSyncReplicas() >= r.cfg.MinInsyncReplicas }

// FlushAlways reports log.flush.policy=always.
func (r *Replica) FlushAlways() bool { return r.cfg.FlushAlways }

// Offline reports an unrecoverable I/O failure.
func (r *Replica) Offline() bool { return r.offline }

// BytesVisible is a running total of the batch bytes below the high-water mark: it
// grows when data becomes readable.
func (r *Replica) BytesVisible() int64 { return r.visibleBytes }

// AppendResult is the outcome of Append for one partition.
type AppendResult struct {
	Err     int16  // Kafka error code; 0 on success
	Message string // human text for the error, if any
	// BaseOffset is the offset given to the first record (the original one for a
	// duplicate).
	BaseOffset int64
	// WaitOffset: acks=all is answered once HighWatermark >= WaitOffset.
	WaitOffset      int64
	LogAppendTimeMs int64 // -1 unless the topic uses LogAppendTime
	Duplicate       bool
	// RecordErrors names the records at fault of a refused batch (Produce v8+).
	RecordErrors []batch.RecordError
}

// Append validates a partition's record set from a Produce request and appends it.
// The bytes are modified in place (the header gets its offset) and not retained.
func (r *Replica) Append(nowMs int64, records []byte) AppendResult {
	if r.offline {
		r.hit(pAppendOffline)
		return AppendResult{Err: kerr.KafkaStorageError.Code, Message: "partition is offline"}
	}
	if r.follower {
		return AppendResult{Err: kerr.NotLeaderForPartition.Code,
			Message: "this replica follows the partition's leader"}
	}
	if len(records) > r.cfg.MaxMessageBytes {
		r.hit(pAppendTooLarge)
		return AppendResult{Err: kerr.MessageTooLarge.Code, Message: fmt.Sprintf(
			"batch of %d bytes exceeds max.message.bytes %d", len(records), r.cfg.MaxMessageBytes)}
	}
	pol := batch.Policy{NowMs: nowMs, LogAppendTime: r.cfg.LogAppendTime,
		TimestampBeforeMaxMs: r.cfg.TimestampBeforeMaxMs,
		TimestampAfterMaxMs:  r.cfg.TimestampAfterMaxMs, Decompressor: r.cfg.Decompressor,
		RequireKey: r.cfg.Compact.Enabled}
	sum, err := batch.Validate(records, &pol)
	if err != nil {
		r.hit(pAppendCorrupt)
		return r.refuse(nowMs, err)
	}
	h := sum.Header
	if !r.cfg.LogAppendTime && h.MaxTimestamp != sum.MaxTimestamp {
		// As Kafka does: the header's max timestamp is the records' (ListOffsets and
		// retention rely on it), whatever the producer wrote.
		batch.SetMaxTimestamp(records, sum.MaxTimestamp)
		h.MaxTimestamp = sum.MaxTimestamp
	}
	if h.IsTransactional() {
		r.hit(pAppendTransactional)
		return AppendResult{Err: kerr.InvalidRecord.Code,
			Message: "transactional batches are not supported yet"}
	}
	pc := r.checkProducer(&h)
	if pc.code != 0 {
		return AppendResult{Err: pc.code, Message: kerr.ErrorForCode(pc.code).Error()}
	}
	if pc.dup != nil {
		return AppendResult{BaseOffset: pc.dup.BaseOffset, WaitOffset: pc.dup.LastOffset + 1,
			LogAppendTimeMs: -1, Duplicate: true}
	}
	return r.appendChecked(nowMs, &h, records)
}

func (r *Replica) appendChecked(nowMs int64, h *batch.Header, b []byte) AppendResult {
	base := r.log.EndOffset()
	if err := r.storeEpochs(); err != nil {
		r.lg.Error("cannot store the leader-epoch cache", zap.Error(err))
		r.hit(pAppendWriteFailed)
		return AppendResult{Err: kerr.KafkaStorageError.Code, Message: "write failed"}
	}
	batch.SetBaseOffset(b, base)
	batch.SetLeaderEpoch(b, r.leaderEpoch)
	h.BaseOffset, h.PartitionLeaderEpoch = base, r.leaderEpoch
	appendTime := int64(-1)
	if r.cfg.LogAppendTime {
		r.hit(pAppendLogAppendTime)
		batch.SetLogAppendTime(b, nowMs)
		h.MaxTimestamp, appendTime = nowMs, nowMs
	}
	if err := r.log.Append(nowMs, *h, b); err != nil {
		r.lg.Error("append failed", zap.Int64("offset", base), zap.Error(err))
		r.hit(pAppendWriteFailed)
		if errors.Is(err, ErrLogOffline) {
			r.goOffline()
		}
		return AppendResult{Err: kerr.KafkaStorageError.Code, Message: "write failed"}
	}
	core.Invariant(r.log.EndOffset() == h.NextOffset(), "R2",
		"%s: log end %d after appending [%d, %d)", r.tp, r.log.EndOffset(), base, h.NextOffset())
	if core.Expensive {
		r.checkReadBack(base, b)
	}
	r.noteFresh(b, base, h.NextOffset())
	r.recordProducer(h)
	r.sinceSnapshot++
	r.bytesAppended += int64(len(b))
	r.markAppend()
	if !r.cfg.FlushAlways || mutantOn("hwm-on-append") {
		r.advanceHighWatermark()
	}
	return AppendResult{BaseOffset: base, WaitOffset: h.NextOffset(), LogAppendTimeMs: appendTime}
}

// refuse answers a batch validation refused, and logs it: at info at most once a
// minute per partition, at debug otherwise.
func (r *Replica) refuse(nowMs int64, err error) AppendResult {
	res := AppendResult{Err: batch.ErrorCode(err), Message: err.Error()}
	var re *batch.RecordsError
	if errors.As(err, &re) {
		res.RecordErrors = re.Records
	}
	if r.refusalLoggedMs == 0 || nowMs-r.refusalLoggedMs >= refusalLogEveryMs {
		r.lg.Info("produced batch refused", zap.String("code", kerr.ErrorForCode(res.Err).Error()),
			zap.Error(err), zap.Int("refused_since_last_line", r.refusalsQuiet))
		r.refusalLoggedMs, r.refusalsQuiet = nowMs, 0
	} else {
		r.refusalsQuiet++
		r.lg.Debug("produced batch refused", zap.Error(err))
	}
	return res
}

func (r *Replica) goOffline() {
	if !r.offline {
		r.lg.Error("partition offline until restart")
	}
	r.offline = true
}

// NeedsSync reports that appended data waits for a sync and none is in flight.
func (r *Replica) NeedsSync() bool {
	return r.cfg.FlushAlways && !r.offline && !r.syncInFlight && r.durable < r.log.EndOffset()
}

// BeginSync marks a sync in flight covering everything appended so far. The driver
// runs Log.Sync and the broker reports back with SyncCompleted. Batches appended while
// it runs wait for the next sync: one fsync covers every batch waiting (group commit).
func (r *Replica) BeginSync() {
	core.Invariant(!r.syncInFlight, "R3", "%s: two syncs in flight", r.tp)
	r.syncInFlight = true
	r.syncTarget = r.log.EndOffset()
}

// SyncCompleted ends the in-flight sync. It reports whether the high-water mark moved.
func (r *Replica) SyncCompleted(err error) bool {
	core.Invariant(r.syncInFlight, "R3", "%s: sync completed with none in flight", r.tp)
	r.syncInFlight = false
	if err != nil {
		// After a failed fsync the page cache cannot be trusted (the kernel may have
		// dropped the dirty pages): nothing after durable may ever be acknowledged.
		r.lg.Error("fsync failed", zap.Error(err))
		r.hit(pSyncFailed)
		r.goOffline()
		return false
	}
	if r.offline {
		// A write failed unrecoverably while the sync ran: the log may have dropped the
		// bytes it covered (a failed fsync at a file's eviction, seed 1686), so its
		// success proves nothing, and an offline log acknowledges nothing more.
		return false
	}
	core.Invariant(r.syncTarget >= r.durable, "R4", "%s: durable went back", r.tp)
	r.durable = r.syncTarget
	if mutantOn("durable-at-completion") {
		r.durable = r.log.EndOffset()
	}
	moved := r.cfg.FlushAlways && r.advanceHighWatermark()
	r.maybeSnapshot()
	r.checkOffsets()
	return moved
}

// maybeSnapshot saves the producer table once enough batches are durable. A snapshot
// is only ever taken at a durable offset, so a crash cannot leave a snapshot that
// describes batches the log lost.
func (r *Replica) maybeSnapshot() {
	every := r.cfg.SnapshotEveryBatches
	if every <= 0 {
		every = DefaultSnapshotEveryBatches
	}
	if r.sinceSnapshot < every || r.durable != r.log.EndOffset() {
		return
	}
	if err := r.log.SaveSnapshot(r.durable, encodeProducers(r.producers)); err != nil {
		r.lg.Warn("producer snapshot not saved", zap.Error(err))
		return
	}
	r.hit(pSnapshotSaved)
	r.snapOffset, r.sinceSnapshot = r.durable, 0
}

// Shutdown syncs the log and saves the producer table (clean stop). The replica must
// not be used afterwards except to Close it.
func (r *Replica) Shutdown() {
	if r.offline {
		return
	}
	if err := r.log.Sync(); err != nil {
		r.lg.Warn("sync at shutdown failed", zap.Error(err))
		return
	}
	r.durable = r.log.EndOffset()
	if r.snapOffset == r.durable {
		return
	}
	if err := r.log.SaveSnapshot(r.durable, encodeProducers(r.producers)); err != nil {
		r.lg.Warn("producer snapshot at shutdown not saved", zap.Error(err))
	}
}
