package disk

import (
	"fmt"
	"math"
	"strconv"
)

// maxSnapshots is how many of the newest replica snapshots a log keeps. Older ones are
// pruned on save; a few are kept because a crash can cut the log below the newest one's
// offset. The newest snapshot at or below the start offset is kept besides: it is the
// only record of producers whose batches retention or DeleteRecords removed, and a
// truncation (which never goes below the start) can delete every snapshot above it
// (simulator seed 2642).
const maxSnapshots = 3

// SaveSnapshot implements replica.Log: the snapshot goes to the StateStore under
// prefix+"snap/"+offset (20 decimal digits, so key order is offset order).
func (l *PartitionLog) SaveSnapshot(offset int64, data []byte) error {
	l.mu.Lock()
	err := l.usable()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("save snapshot of %s: negative offset %d", l.dir, offset)
	}
	if err := l.state.Set(fmt.Appendf(nil, "%s%020d", l.snapPrefix(), offset), data); err != nil {
		return fmt.Errorf("save snapshot of %s: %w", l.dir, err)
	}
	return l.pruneSnapshots()
}

// pruneSnapshots keeps the newest maxSnapshots snapshots and the newest one at or
// below the start offset (the floor); the rest go.
func (l *PartitionLog) pruneSnapshots() error {
	l.mu.Lock()
	start := l.start
	l.mu.Unlock()
	var offs []int64
	var keys [][]byte
	err := l.snapshotOffsets(func(off int64, k, _ []byte) {
		offs, keys = append(offs, off), append(keys, append([]byte(nil), k...))
	})
	floor := -1
	for i, off := range offs {
		if off <= start {
			floor = i
		}
	}
	for i := 0; err == nil && i < len(keys)-maxSnapshots; i++ {
		if i != floor {
			err = l.state.Delete(keys[i])
		}
	}
	if err != nil {
		return fmt.Errorf("prune snapshots of %s: %w", l.dir, err)
	}
	return nil
}

// snapshotOffsets calls fn with the offset and key of every stored snapshot, oldest
// first (keys sort by offset).
func (l *PartitionLog) snapshotOffsets(fn func(off int64, k, v []byte)) error {
	pfx := l.snapPrefix()
	return l.state.Scan([]byte(pfx), func(k, v []byte) error {
		off, err := strconv.ParseInt(string(k[len(pfx):]), 10, 64)
		if err != nil {
			return fmt.Errorf("snapshot key %q: %w", k, err)
		}
		fn(off, k, v)
		return nil
	})
}

// LoadSnapshot implements replica.Log.
func (l *PartitionLog) LoadSnapshot() (int64, []byte, bool, error) {
	return l.LoadSnapshotAtMost(math.MaxInt64)
}

// LoadSnapshotAtMost implements replica.Log.
func (l *PartitionLog) LoadSnapshotAtMost(limit int64) (int64, []byte, bool, error) {
	l.mu.Lock()
	err := l.usable()
	end := min(l.active().next, limit)
	l.mu.Unlock()
	if err != nil {
		return 0, nil, false, err
	}
	best, found := int64(-1), false
	var data []byte
	err = l.snapshotOffsets(func(off int64, _, v []byte) {
		if off <= end && off > best {
			best, found, data = off, true, append([]byte(nil), v...)
		}
	})
	if err != nil {
		return 0, nil, false, fmt.Errorf("load snapshot of %s: %w", l.dir, err)
	}
	if !found {
		return 0, nil, false, nil
	}
	return best, data, true, nil
}

// epochsKey holds the log's leader-epoch cache.
func (l *PartitionLog) epochsKey() []byte { return []byte(l.prefix + "epochs") }

// SaveLeaderEpochs implements replica.Log: the cache is one StateStore value, synced.
func (l *PartitionLog) SaveLeaderEpochs(data []byte) error {
	l.mu.Lock()
	err := l.usable()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := l.state.Set(l.epochsKey(), data); err != nil {
		return fmt.Errorf("save leader epochs of %s: %w", l.dir, err)
	}
	return nil
}

// LoadLeaderEpochs implements replica.Log.
func (l *PartitionLog) LoadLeaderEpochs() ([]byte, bool, error) {
	l.mu.Lock()
	err := l.usable()
	l.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	v, ok, err := l.state.Get(l.epochsKey())
	if err != nil {
		return nil, false, fmt.Errorf("load leader epochs of %s: %w", l.dir, err)
	}
	return v, ok, nil
}
