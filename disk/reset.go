package disk

import (
	"fmt"

	"go.uber.org/zap"
)

// ResetTo implements replica.Log: a follower whose log ends below its leader's log
// start empties its log and starts over at the leader's start, and one whose log
// diverges from its leader's below its own log start empties it and starts over at the
// divergence point, which may be below the old start (Kafka's truncateFullyAndStartAt,
// both).
//
// Crash safety (docs/storage.md): past the end, the new start offset is stored first,
// durably, in the node-state store. A crash after that and before the directory is
// fsynced leaves some mix of the old segments and the new empty one; recovery drops a
// segment that does not continue the log, finds the stored start past what is left, and
// empties the log at the start (resetAt), which is this operation's result. A crash
// before it leaves the old log, untouched. Below the end the new start is stored last,
// after the directory fsync: stored first, a crash could leave old segments under a
// start below the old one and show records that were deleted; stored last, a crash
// leaves a suffix of the old log under its old start, or an empty log at the old start
// (recovery empties a log whose stored start is past what is left), from which the
// follower asks its leader again. Producer snapshots are dropped before the segments:
// they describe batches that are gone; one a crash leaves behind is below the new
// start, where the replica's recovery ignores it, or describes a log that is still
// there.
func (l *PartitionLog) ResetTo(offset int64, nowMs int64) error {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("reset %s to %d: %w", l.dir, offset, ErrOutOfRange)
	}
	pastEnd := offset >= l.active().next
	if pastEnd {
		if err := l.storeResetStart(offset); err != nil {
			return err
		}
	}
	l.truncations++ // a clean that began before this discards its work
	l.cleanedTo = offset
	if err := l.dropSnapshotsAfter(-1); err != nil {
		return l.goOffline(err)
	}
	old := l.segs
	for i, s := range old {
		if err := l.removeSegment(s); err != nil {
			l.segs = old[i:]
			return l.goOffline(fmt.Errorf("reset %s: remove segment %d: %w", l.dir, s.base,
				err))
		}
	}
	l.segs = nil
	if err := l.newEmptySegment(offset, nowMs); err != nil {
		l.segs = old[len(old)-1:] // closed, but never empty while open; offline anyway
		return l.goOffline(fmt.Errorf("reset %s: create segment %d: %w", l.dir, offset, err))
	}
	l.start = offset
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.goOffline(fmt.Errorf("reset %s: fsync directory: %w", l.dir, err))
	}
	l.dirSynced = l.dirChanges
	if !pastEnd {
		if err := l.storeResetStart(offset); err != nil {
			return l.goOffline(err)
		}
	}
	l.lg.Info("log emptied and restarted", zap.Int64("start_offset", offset),
		zap.Bool("below_old_end", !pastEnd))
	return nil
}

func (l *PartitionLog) storeResetStart(offset int64) error {
	if err := l.state.Set(l.startKey(), be64(offset)); err != nil {
		return fmt.Errorf("reset %s to %d: store the start offset: %w", l.dir, offset, err)
	}
	return nil
}
