package replica

import (
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
)

// The follower side of replication (issue 8): a follower appends the batches its
// leader's Fetch returned as they are (offsets, epochs, timestamps and CRCs assigned by
// the leader), takes the high-water mark the leader reports, and cuts a tail that
// diverged from the new leader's log before following it. Nothing drives these yet;
// the replica fetcher will.

// ErrNotFollower is returned by AppendReplicated on a replica that leads.
var ErrNotFollower = errors.New("replica is not a follower")

// BecomeFollower makes the replica follow a leader of epoch: produces from clients are
// refused (NOT_LEADER_OR_FOLLOWER), AppendReplicated takes the leader's batches, and
// the high-water mark moves only with SetLeaderHighWatermark, never with its own
// fsyncs.
func (r *Replica) BecomeFollower(epoch int32) {
	r.ForgetFresh()
	r.forgetFollowerReports()
	r.forgetRecoveredHighWatermark()
	r.follower = true
	r.leaderEpoch = max(r.leaderEpoch, epoch)
}

// BecomeLeader makes the replica lead in epoch from its log end, as a newly elected
// leader does; epoch must be newer than every epoch in its log (R8). The high-water
// mark stays where it was until its followers' offsets move it.
func (r *Replica) BecomeLeader(epoch int32) error {
	if last, ok := r.epochs.latest(); ok && epoch < last.Epoch {
		return fmt.Errorf("%s: lead in epoch %d, log has epoch %d: %w", r.tp, epoch,
			last.Epoch, ErrEpochWentBack)
	}
	if r.follower {
		r.forgetFollowerReports()
	}
	r.forgetRecoveredHighWatermark()
	r.follower = false
	r.leaderEpoch = epoch
	r.leadFrom(r.log.EndOffset())
	return nil
}

// forgetRecoveredHighWatermark lowers the high-water mark New took from the recovered
// log's end to the log start, the first time the replica takes a role in a replicated
// partition. The tail it recovered reached this node but maybe not the rest of the
// ISR: exposed now, it could be read and then lost with this node (docs/replication.md,
// "The high-water mark after a restart"). A follower learns the mark again from its
// leader's answers; a leader from its followers' fetches (at once with an ISR of one).
// Kafka reads it from a checkpoint file instead, which can only be lower than the true
// mark as well; starting from the log start costs one fetch round and no file.
func (r *Replica) forgetRecoveredHighWatermark() {
	if !r.hwmRecovered || mutantOn("keeps-recovered-hwm") {
		return
	}
	r.hwmRecovered = false
	r.hwm = r.log.StartOffset()
}

// forgetFollowerReports drops what the followers reported while this replica led
// before. Their logs may have been cut since (a leader that lacked their tail, a lost
// disk): kept, an old report of a follower now behind let a replica elected again set
// its high-water mark past what that ISR member held (SetISR counts a member at the
// larger of its report and the mark; seed 2145 of the default draw, read-uncommitted).
// A new leader hears each follower afresh at its next fetch, as Kafka's resets a
// remote replica's log end to unknown when a broker becomes leader.
func (r *Replica) forgetFollowerReports() {
	if mutantOn("reports-survive-follow") {
		return
	}
	r.replicated = nil
}

// Follower reports whether the replica follows another.
func (r *Replica) Follower() bool { return r.follower }

// ErrNotContiguous is returned by AppendReplicated for batches that do not start at
// the log end offset or do not follow one another.
var ErrNotContiguous = errors.New("replicated batches do not continue the log")

// ErrEpochWentBack is returned by AppendReplicated for a batch of an older leader epoch
// than one already in the log: the follower must truncate (OffsetForLeaderEpoch) first.
var ErrEpochWentBack = errors.New("replicated batch of an older leader epoch")

// AppendReplicated appends whole batches fetched from the leader, unchanged. Each must
// have a valid CRC, start where the log ends and carry a leader epoch no older than the
// latest in the cache; a new epoch is stored in the cache before its first batch. It
// stops at the first batch it refuses and returns how many bytes it appended: those
// before it stay. The high-water mark does not move (SetLeaderHighWatermark does).
func (r *Replica) AppendReplicated(nowMs int64, records []byte) (int, error) {
	if r.offline {
		return 0, ErrLogOffline
	}
	if !r.follower {
		return 0, fmt.Errorf("%s: %w", r.tp, ErrNotFollower)
	}
	done := 0
	// SplitStored: a compacted leader's log holds batches the cleaner thinned or
	// emptied, which the strict produce check refuses (seeds 1, 3, 6, 7 with nodes=3
	// and the compaction workload: the follower never rejoined the ISR).
	err := batch.SplitStored(records, func(h batch.Header, b []byte) error {
		n := len(b)
		if end := r.log.EndOffset(); h.BaseOffset < end && h.NextOffset() > end &&
			h.RecordCount == 0 && !h.HasProducer() {
			// The leader's cleaner merged a run of emptied batches into one filler that
			// begins below this log's end: take the part after it (seeds 1 and 7 with
			// nodes=3 and the compaction workload: the follower refused it forever).
			b = batch.RebaseEmpty(b, end)
			h, _ = batch.ParseHeader(b)
		}
		if err := r.appendOneReplicated(nowMs, h, b); err != nil {
			return err
		}
		done += n
		return nil
	})
	return done, err
}

func (r *Replica) appendOneReplicated(nowMs int64, h batch.Header, b []byte) error {
	if _, err := batch.CheckStored(b); err != nil {
		return fmt.Errorf("%s: replicated batch at %d: %w", r.tp, h.BaseOffset, err)
	}
	if end := r.log.EndOffset(); h.BaseOffset != end {
		return fmt.Errorf("%s: batch at %d, log end %d: %w", r.tp, h.BaseOffset, end,
			ErrNotContiguous)
	}
	if last, ok := r.epochs.latest(); ok && h.PartitionLeaderEpoch < last.Epoch {
		return fmt.Errorf("%s: batch at %d of epoch %d after epoch %d: %w", r.tp,
			h.BaseOffset, h.PartitionLeaderEpoch, last.Epoch, ErrEpochWentBack)
	}
	if r.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) {
		r.epochsDirty = true
	}
	if err := r.storeEpochs(); err != nil {
		return fmt.Errorf("%s: store leader epochs: %w", r.tp, err)
	}
	if err := r.log.Append(nowMs, h, b); err != nil {
		if errors.Is(err, ErrLogOffline) {
			r.goOffline()
		}
		return fmt.Errorf("%s: append replicated batch at %d: %w", r.tp, h.BaseOffset, err)
	}
	core.Invariant(r.log.EndOffset() == h.NextOffset(), "R2",
		"%s: log end %d after replicating [%d, %d)", r.tp, r.log.EndOffset(), h.BaseOffset,
		h.NextOffset())
	r.recordProducer(&h)
	r.sinceSnapshot++
	r.bytesAppended += int64(len(b))
	r.markAppend()
	r.leaderEpoch = max(r.leaderEpoch, h.PartitionLeaderEpoch)
	return nil
}

// SetLeaderHighWatermark takes the high-water mark the leader sent with its Fetch
// answer, bounded by what this follower holds (durably, with log.flush.policy=always).
// It never goes back: a leader's high-water mark does not.
func (r *Replica) SetLeaderHighWatermark(hwm int64) bool {
	limit := r.log.EndOffset()
	if r.cfg.FlushAlways {
		limit = min(limit, max(r.durable, r.visibleUnsynced))
	}
	next := min(hwm, limit)
	if next <= r.hwm {
		return false
	}
	r.hwm = next
	r.visibleBytes = max(r.visibleBytes, r.bytesAt(next))
	r.checkOffsets()
	return true
}

// TruncateTo cuts the log back to the new end the follower and its new leader agree
// on (OffsetForLeaderEpoch), before it fetches from there: the cut batches go from the
// log, the epoch cache and the producer table, which is rebuilt from the last snapshot
// at or below the new end. No sync may be in flight (the caller waits for it). It
// returns the new end, which may be below offset when offset falls inside a batch.
func (r *Replica) TruncateTo(offset int64) (int64, error) {
	r.ForgetFresh()
	if r.offline {
		return 0, ErrLogOffline
	}
	core.Invariant(!r.syncInFlight, "R3", "%s: truncation with a sync in flight", r.tp)
	if offset >= r.log.EndOffset() {
		// Nothing to cut from the log, but an epoch this replica began at its end and
		// wrote nothing in (it led briefly) goes: kept, it would be the last epoch the
		// follower reports, which the leader never had, and the leader would answer
		// every fetch with the same divergence.
		return r.log.EndOffset(), r.dropEpochsFrom(r.log.EndOffset())
	}
	end, err := r.log.TruncateTo(offset)
	if err != nil {
		if errors.Is(err, ErrLogOffline) {
			r.goOffline()
		}
		return 0, err
	}
	r.lg.Info("truncated a divergent tail", zap.Int64("to", offset), zap.Int64("end", end))
	if err := r.dropEpochsFrom(end); err != nil {
		return 0, err
	}
	// TruncateTo made the log durable up to end.
	r.durable = end
	r.hwm = min(r.hwm, end)
	r.visibleUnsynced = min(r.visibleUnsynced, end)
	r.cutMarks(end)
	r.producers, r.sinceSnapshot, r.snapOffset = map[int64]*producerEntry{}, 0, 0
	if err := r.recoverProducers(); err != nil {
		r.goOffline()
		return 0, err
	}
	r.checkOffsets()
	return end, nil
}

// dropEpochsFrom forgets the epochs that begin at or after end and stores the cache.
func (r *Replica) dropEpochsFrom(end int64) error {
	if !r.epochs.truncateFromEnd(end) {
		return nil
	}
	r.epochsDirty = true
	if err := r.storeEpochs(); err != nil {
		r.goOffline()
		return fmt.Errorf("%s: store leader epochs after truncation: %w", r.tp, err)
	}
	return nil
}

// ResetTo empties a follower's log and starts it over at offset (Kafka's
// truncateFullyAndStartAt): its leader's log start, when the log ends below it (the
// leader deleted what the follower would fetch next: retention or DeleteRecords), or
// the point where the log diverges from its leader's, when that lies below its own log
// start (nothing it holds is in the leader's log; the offset is a batch boundary of the
// leader's). The epoch cache and the producer state start empty (the leader's batches
// rebuild them), and the high-water mark is offset. The log is reset first and the
// empty epoch cache stored after it: a crash between leaves an empty log whose stale
// epochs the next truncation round drops (recovery moves them to the log start), while
// the reverse order could leave a divergent log with no epochs, which the follower
// would fetch after without any divergence check.
func (r *Replica) ResetTo(offset, nowMs int64) error {
	r.ForgetFresh()
	if r.offline {
		return ErrLogOffline
	}
	if !r.follower {
		return fmt.Errorf("%s: reset: %w", r.tp, ErrNotFollower)
	}
	core.Invariant(!r.syncInFlight, "R3", "%s: reset with a sync in flight", r.tp)
	if offset < 0 {
		return fmt.Errorf("%s: reset to a negative offset %d", r.tp, offset)
	}
	if err := r.log.ResetTo(offset, nowMs); err != nil {
		if errors.Is(err, ErrLogOffline) {
			r.goOffline()
		}
		return err
	}
	if len(r.epochs.entries) > 0 {
		r.epochs.entries = nil
		r.epochsDirty = true
		if err := r.storeEpochs(); err != nil {
			r.goOffline()
			return fmt.Errorf("%s: store leader epochs after a reset: %w", r.tp, err)
		}
	}
	r.lg.Info("follower log emptied and restarted", zap.Int64("start", offset))
	r.durable, r.hwm = offset, offset
	r.visibleUnsynced = min(r.visibleUnsynced, offset)
	r.marks = r.marks[:0]
	r.visibleBytes = r.bytesAppended
	r.producers, r.sinceSnapshot, r.snapOffset = map[int64]*producerEntry{}, 0, 0
	r.checkOffsets()
	return nil
}
