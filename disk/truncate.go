package disk

import (
	"errors"
	"fmt"
	"io"

	"go.uber.org/zap"
)

// TruncateTo implements replica.Log: it removes every batch holding an offset at or
// after offset and returns the new end offset, which is offset itself at a batch
// boundary and otherwise the base of the batch holding it (batches are atomic, as in
// Kafka's truncateTo). A follower does this to drop a tail that diverged from its new
// leader's log (docs/storage.md, "Truncation").
//
// The truncation is durable on return, and so is the log up to the new end: later
// segments are removed, what is left is fsynced oldest first (the cut segment, now the
// active one without index files, always) and so is the directory, and producer
// snapshots past the new end are deleted. A crash never brings a cut batch back to a
// log that may since have taken others at its offsets.
// Those fsyncs run on the caller's thread: truncation happens when a follower meets a
// new leader, not per request. A Sync in flight records only what it covered below the
// cut (truncFloor).
//
// offset must not be below StartOffset, nor cut the batch holding it (ErrOutOfRange).
func (l *PartitionLog) TruncateTo(offset int64) (int64, error) {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return 0, err
	}
	if offset >= l.active().next {
		return l.active().next, nil
	}
	l.truncations++
	l.cleanedTo = min(l.cleanedTo, offset)
	if offset < l.start {
		return 0, fmt.Errorf("truncate %s to %d: %w (start offset %d)", l.dir, offset,
			ErrOutOfRange, l.start)
	}
	i := l.segIndexOf(offset)
	seg := l.segs[i]
	pos, newEnd, err := l.cutPoint(seg, offset)
	if err != nil {
		return 0, fmt.Errorf("truncate %s to %d: %w", l.dir, offset, err)
	}
	if newEnd < l.start {
		return 0, fmt.Errorf("truncate %s to %d: %w: the batch holding it begins at %d, "+
			"below the start offset %d", l.dir, offset, ErrOutOfRange, newEnd, l.start)
	}
	if err := l.cutAfter(i, pos, newEnd); err != nil {
		return 0, err
	}
	if err := l.dropSnapshotsAfter(newEnd); err != nil {
		return 0, l.goOffline(err)
	}
	l.lg.Info("log truncated", zap.Int64("to", offset), zap.Int64("end_offset", newEnd))
	return newEnd, nil
}

// segIndexOf returns the index in l.segs of the segment holding offset.
func (l *PartitionLog) segIndexOf(offset int64) int {
	i := len(l.segs) - 1
	for i > 0 && l.segs[i].base > offset {
		i--
	}
	return i
}

// cutPoint finds, in seg, the position and base offset of the first batch that holds an
// offset at or after offset. It scans from the nearest offset index entry, checking the
// offsets chain as reads do.
func (l *PartitionLog) cutPoint(seg *segment, offset int64) (int64, int64, error) {
	if offset <= seg.base {
		return 0, seg.base, nil
	}
	pos, rel := seg.idx.lookupOffsetEntry(uint32(offset - seg.base))
	sc := newChainScanner(seg.f, pos, seg.size, seg.base+int64(rel), seg.next)
	for {
		at := sc.pos
		h, _, err := sc.next(false)
		if err == io.EOF {
			return seg.size, seg.next, nil
		}
		if err != nil {
			if isCorrupt(err) {
				err = l.rotFound(fmt.Errorf("%w: %w", ErrCorrupt, err))
			}
			return 0, 0, err
		}
		if h.NextOffset() > offset {
			return at, h.BaseOffset, nil
		}
	}
}

// cutAfter removes the segments after l.segs[i] (newest first, so a crash part way
// leaves a prefix), truncates segment i at pos and makes it the active segment, then
// fsyncs the directory. A failure part way takes the log offline: recovery sorts it out.
func (l *PartitionLog) cutAfter(i int, pos, newEnd int64) error {
	for j := len(l.segs) - 1; j > i; j-- {
		if err := l.removeSegment(l.segs[j]); err != nil {
			l.segs = l.segs[:j+1]
			return l.goOffline(fmt.Errorf("truncate %s: remove segment %d: %w", l.dir,
				l.segs[j].base, err))
		}
	}
	l.segs = l.segs[:i+1]
	seg := l.segs[i]
	if seg.sealed || seg.indexedSize > 0 {
		// Index files certify bytes that are about to change.
		l.dirChanges++
		if err := removeIndexFiles(l.fs, l.dir, seg.base); err != nil {
			return l.goOffline(fmt.Errorf("truncate %s: remove index files of segment %d: %w",
				l.dir, seg.base, err))
		}
	}
	if err := seg.f.Truncate(pos); err != nil {
		return l.goOffline(fmt.Errorf("truncate %s: segment %d to %d bytes: %w", l.dir,
			seg.base, pos, err))
	}
	seg.size, seg.next, seg.sealed = pos, newEnd, false
	seg.synced = min(seg.synced, pos)
	seg.truncFloor = min(seg.truncFloor, pos)
	seg.indexedSize, seg.indexFailed = 0, false
	// fsync oldest first what is left, cut segment included (its size changed even if
	// no byte is unsynced): a durable byte implies every earlier one is (recovery).
	for _, s := range l.segs {
		if s.synced == s.size && s != seg {
			continue
		}
		if err := s.f.Sync(); err != nil {
			failed := l.goOffline(fmt.Errorf("truncate %s: fsync segment %d: %w", l.dir,
				s.base, err))
			l.dropUnsynced()
			return failed
		}
		s.synced = s.size
	}
	if err := l.trimIndex(seg); err != nil {
		err = fmt.Errorf("truncate %s: rebuild index of segment %d: %w", l.dir, seg.base, err)
		if isCorrupt(err) {
			// Rot above the log start: the next recovery must validate every segment.
			return l.rotFound(fmt.Errorf("%w: %w", ErrCorrupt, err))
		}
		return l.goOffline(err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.goOffline(fmt.Errorf("truncate %s: fsync directory: %w", l.dir, err))
	}
	l.dirSynced = l.dirChanges
	return nil
}

// trimIndex drops the index entries at or past the segment's new size and recomputes
// its max timestamp from the headers after the last time entry kept (the maximum up to
// that entry is its timestamp); past a rotten batch below the log start, from the offset
// entry at or below the start.
func (l *PartitionLog) trimIndex(seg *segment) error {
	x := &seg.idx
	for len(x.offs) > 0 && int64(x.offs[len(x.offs)-1].pos) >= seg.size {
		x.offs = x.offs[:len(x.offs)-1]
	}
	for len(x.times) > 0 && int64(x.times[len(x.times)-1].pos) >= seg.size {
		x.times = x.times[:len(x.times)-1]
	}
	x.lastOff, x.lastTime = 0, 0
	if n := len(x.offs); n > 0 {
		x.lastOff = int64(x.offs[n-1].pos)
	}
	from, first := int64(0), seg.base
	x.maxTs, x.maxTsOff = -1, -1
	if n := len(x.times); n > 0 {
		e := x.times[n-1]
		x.lastTime = int64(e.pos)
		from, first = int64(e.pos), seg.base+int64(e.rel)
	}
	err := seg.scanMaxTimestamp(from, first)
	if err == nil || !isCorrupt(err) || l.start <= first {
		return err
	}
	// A rotten batch below the log start, which recovery started the log after
	// (skipRotten): what lies below the start is not needed, so the max timestamp is
	// taken from the offset entry at or below the start (none when the whole segment is
	// below it).
	x.maxTs, x.maxTsOff = -1, -1
	if l.start >= seg.next {
		return nil
	}
	pos, rel := x.lookupOffsetEntry(uint32(l.start - seg.base))
	if seg.base+int64(rel) <= first {
		return err
	}
	return seg.scanMaxTimestamp(pos, seg.base+int64(rel))
}

// scanMaxTimestamp raises the segment's max timestamp with the headers of the batches
// from position from (first, the offset there) to its end.
func (seg *segment) scanMaxTimestamp(from, first int64) error {
	x := &seg.idx
	sc := newChainScanner(seg.f, from, seg.size, first, seg.next)
	for {
		h, _, err := sc.next(false)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.MaxTimestamp > x.maxTs {
			x.maxTs, x.maxTsOff = h.MaxTimestamp, h.BaseOffset
		}
	}
}

// dropSnapshotsAfter deletes the producer snapshots taken past end: they describe
// batches the truncation removed, and would be loaded once the log grows past them.
func (l *PartitionLog) dropSnapshotsAfter(end int64) error {
	var stale [][]byte
	err := l.snapshotOffsets(func(off int64, k, _ []byte) {
		if off > end {
			stale = append(stale, append([]byte(nil), k...))
		}
	})
	for _, k := range stale {
		err = errors.Join(err, l.state.Delete(k))
	}
	if err != nil {
		return fmt.Errorf("truncate %s: drop snapshots past %d: %w", l.dir, end, err)
	}
	return nil
}
