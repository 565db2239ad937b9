package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/batch"
)

// maxIndexFileBytes bounds an index file recovery will read: a 2 GiB segment indexed
// every 64 bytes would need less. A larger file is treated as corrupt.
const maxIndexFileBytes = 512 << 20

// mutantTruncateOnReadError is false except in one test, which sets it to prove that
// test catches a recovery treating a read error as a torn batch (the data-loss bug).
var mutantTruncateOnReadError = false

// recover rebuilds the in-memory log from the directory. Segments are visited oldest
// first. A segment's prefix certified by valid index files is trusted; the rest is
// validated batch by batch (batch.Check, contiguous offsets) and truncated at the first
// bad byte, after which every later segment is dropped: Sync makes segments durable
// oldest first, so nothing after a torn byte was ever acknowledged as durable. A read
// error is not a bad byte: it fails the whole open (an unreadable index file only
// costs the index, which is rebuilt from the segment).
func (l *PartitionLog) recover(nowMs int64) error {
	if err := l.undoDeadFlights(); err != nil {
		return err
	}
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return err
	}
	if changed, err := l.finishCleaning(names); err != nil {
		return err
	} else if changed {
		l.dirChanges++
		if names, err = l.fs.ReadDir(l.dir); err != nil {
			return err
		}
	}
	persisted, err := l.loadStart()
	if err != nil {
		return err
	}
	rot, err := l.rotMarked()
	if err != nil {
		return err
	}
	dropping := false
	for _, name := range names {
		base, suffix, ok := parseSegmentName(name)
		if !ok || suffix != logSuffix {
			continue
		}
		if !dropping && len(l.segs) > 0 && base > l.active().base && base < l.active().next {
			// A segment a clean merged into the one before it (finishCleaning swapped that
			// one in, or the clean's removal of this one did not reach the disk): every
			// offset of it is in that one.
			l.lg.Info("dropping a segment merged into the one before it by a clean",
				zap.Int64("segment", base), zap.Int64("into", l.active().base))
			if err := l.dropSegmentFiles(base); err != nil {
				return err
			}
			continue
		}
		if !dropping && len(l.segs) > 0 && base != l.active().next {
			l.lg.Warn("segment does not continue the log; dropping it and all later ones",
				zap.Int64("segment", base), zap.Int64("expected", l.active().next))
			dropping = true
		}
		if dropping {
			if err := l.dropSegmentFiles(base); err != nil {
				return err
			}
			continue
		}
		seg, clean, err := l.recoverSegment(base, rot)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
		dropping = !clean
	}
	if err := l.removeOrphans(names); err != nil {
		return err
	}
	if rot || l.rotStart > 0 {
		if persisted, err = l.afterRot(persisted); err != nil {
			return err
		}
	}
	if len(l.segs) == 0 {
		if err := l.newEmptySegment(max(persisted, 0), nowMs); err != nil {
			return err
		}
	}
	l.start = max(l.segs[0].base, persisted)
	if l.start > l.active().next {
		if err := l.resetAt(l.start, nowMs); err != nil {
			return err
		}
	}
	if tainted, err := l.tainted(); err != nil {
		return err
	} else if tainted {
		if err := l.cureTaint(); err != nil {
			return err
		}
	}
	if err := l.syncDirIfChanged(); err != nil {
		return err
	}
	return l.loadCreatedTimes(nowMs)
}

// syncDirIfChanged fsyncs the directory if its entries may have changed since it was
// last synced: recovery's removals and creations, and whatever a run killed before its
// first Sync left. What recovery keeps is then durable as a whole, and nothing it removed
// comes back after a crash under a segment created later at the same base. A new
// directory (entryPending) holds nothing to protect yet: its first Sync syncs it.
func (l *PartitionLog) syncDirIfChanged() error {
	if l.entryPending || l.dirChanges == l.dirSynced {
		return nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("fsync directory %s: %w", l.dir, err)
	}
	l.dirSynced = l.dirChanges
	return nil
}

func (l *PartitionLog) loadStart() (int64, error) {
	v, ok, err := l.state.Get(l.startKey())
	if err != nil || !ok {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("start offset of %s: %d-byte value", l.dir, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

func (l *PartitionLog) dropSegmentFiles(base int64) error {
	l.dirChanges++
	if err := removeSegmentFiles(l.fs, l.dir, base); err != nil {
		return err
	}
	return l.state.Delete(l.createdKey(base))
}

// removeOrphans deletes index files whose segment is gone. A stale index left behind
// could otherwise certify a future segment with the same base.
func (l *PartitionLog) removeOrphans(names []string) error {
	kept := map[int64]bool{}
	for _, s := range l.segs {
		kept[s.base] = true
	}
	for _, name := range names {
		base, suffix, ok := parseSegmentName(name)
		if ok && suffix != logSuffix && !kept[base] {
			l.dirChanges++
			if err := l.fs.Remove(l.dir + "/" + name); err != nil && !isNotExist(err) {
				return err
			}
		}
	}
	return nil
}

// resetAt replaces every segment with one empty segment at offset. It runs when the
// durable start offset (DeleteRecords) is past everything a crash left: all of that data
// was deleted anyway.
func (l *PartitionLog) resetAt(offset int64, nowMs int64) error {
	l.lg.Warn("start offset beyond recovered log end; starting empty",
		zap.Int64("start", offset), zap.Int64("end", l.active().next))
	for _, s := range l.segs {
		if err := l.removeSegment(s); err != nil {
			return err
		}
	}
	l.segs = nil
	return l.newEmptySegment(offset, nowMs)
}

func (l *PartitionLog) newEmptySegment(base, nowMs int64) error {
	// A directory just made holds no file to remove, and the new file's entry is made
	// durable with the directory's, at the first Sync.
	if !l.entryPending {
		l.dirChanges++
		if err := removeSegmentFiles(l.fs, l.dir, base); err != nil {
			return err
		}
	}
	f, err := l.fs.Create(segmentFile(l.dir, base, logSuffix))
	if err != nil {
		return err
	}
	seg := &segment{base: base, f: f, next: base, createdMs: nowMs, idx: newSegIndex()}
	l.segs = append(l.segs, seg)
	return nil
}

func (l *PartitionLog) loadCreatedTimes(nowMs int64) error {
	for _, s := range l.segs {
		v, ok, err := l.state.Get(l.createdKey(s.base))
		if err != nil {
			return err
		}
		s.createdMs = nowMs
		if ok && len(v) == 8 {
			s.createdMs = int64(binary.BigEndian.Uint64(v))
		}
	}
	for _, s := range l.segs[:len(l.segs)-1] {
		s.sealed = true
	}
	return nil
}

// recoverSegment opens one segment, trusts what its index files certify (unless a read
// found corruption: rot) and validates the rest. clean is false when it had to truncate.
func (l *PartitionLog) recoverSegment(base int64, rot bool) (*segment, bool, error) {
	f, err := l.fs.OpenFile(segmentFile(l.dir, base, logSuffix))
	if err != nil {
		return nil, false, err
	}
	seg := &segment{base: base, f: f, next: base, idx: newSegIndex()}
	size := f.Size()
	trusted := int64(0)
	if h, idx, ok := l.loadIndexes(seg, size); ok && !rot {
		seg.idx, seg.next, trusted, seg.indexedSize = idx, h.next, h.size, h.size
	} else {
		l.dirChanges++
		if err := removeIndexFiles(l.fs, l.dir, base); err != nil {
			_ = f.Close()
			return nil, false, err
		}
	}
	clean, err := l.validateTail(seg, trusted, size)
	if err != nil {
		_ = f.Close()
		return nil, false, err
	}
	return seg, clean, nil
}

func removeIndexFiles(fsys FS, dir string, base int64) error {
	for _, suffix := range []string{indexSuffix, timeIndexSuffix} {
		if err := fsys.Remove(segmentFile(dir, base, suffix)); err != nil && !isNotExist(err) {
			return err
		}
	}
	return nil
}

// validateTail checks every batch from position from to size, extending the index, and
// truncates at the first bad one. Whatever it accepted or cut is then fsynced, so the
// recovered log is durable as a whole.
func (l *PartitionLog) validateTail(seg *segment, from, size int64) (bool, error) {
	seg.size = from
	sc := newScanner(seg.f, from, size)
	var bad error
	for bad == nil {
		pos := sc.pos
		h, b, err := sc.next(true)
		if err == io.EOF {
			break
		}
		var cerr *corruptError
		switch {
		case errors.As(err, &cerr):
			bad = cerr
			continue
		case err != nil && mutantTruncateOnReadError:
			bad = &corruptError{pos, err}
			continue
		case err != nil:
			// A read error is not corruption: truncating here would throw away synced
			// data. Fail the open; the partition stays offline until a restart.
			return false, err
		}
		if _, err := batch.CheckStored(b); err != nil && !mutantOn("recovery-skips-crc") {
			bad = &corruptError{pos, err}
		} else if h.BaseOffset != seg.next && !mutantOn("recovery-offsets-unchecked") {
			bad = &corruptError{pos, fmt.Errorf("base offset %d, expected %d", h.BaseOffset, seg.next)}
		}
		if bad != nil {
			// Followed by a valid batch of higher offsets, it is not a torn tail.
			resume, err := l.rotSkip(seg, sc.pos, size)
			if err != nil {
				return false, err
			}
			if resume >= 0 {
				l.skipRotten(seg, pos, sc.pos, resume, bad)
				bad = nil
			}
		} else if h.LastOffset()-seg.base > maxRelOffset {
			bad = &corruptError{pos, fmt.Errorf("offset %d too far from segment base", h.LastOffset())}
		} else {
			seg.idx.add(&h, seg.base, pos, l.cfg.IndexInterval)
			seg.size, seg.next = sc.pos, h.NextOffset()
		}
	}
	if bad != nil && !mutantOn("recovery-no-truncate") {
		l.lg.Warn("truncating torn or corrupt segment tail", zap.Int64("segment", seg.base),
			zap.Int64("at", seg.size), zap.Int64("dropped_bytes", size-seg.size), zap.Error(bad))
		if err := seg.f.Truncate(seg.size); err != nil {
			return false, err
		}
	}
	if size > from {
		if err := seg.f.Sync(); err != nil {
			l.markTainted(err)
			return false, err
		}
	}
	seg.synced = seg.size
	return bad == nil, nil
}

// loadIndexes reads and checks a segment's index files. They are trusted only when
// both decode, agree, describe this segment, cover at most its current size, and spot
// checks of the batches they point at agree.
func (l *PartitionLog) loadIndexes(seg *segment, size int64) (indexHeader, segIndex, bool) {
	ob, err1 := readSmallFile(l.fs, segmentFile(l.dir, seg.base, indexSuffix))
	tb, err2 := readSmallFile(l.fs, segmentFile(l.dir, seg.base, timeIndexSuffix))
	if err1 != nil || err2 != nil {
		return indexHeader{}, segIndex{}, false
	}
	h, idx, err := decodeIndexes(ob, tb)
	if err != nil || h.base != seg.base || h.size <= 0 || h.size > size {
		return h, idx, false
	}
	if !l.batchAt(seg, 0, seg.base) {
		return h, idx, false
	}
	if n := len(idx.offs); n > 0 {
		last := idx.offs[n-1]
		if !l.batchAt(seg, int64(last.pos), seg.base+int64(last.rel)) {
			return h, idx, false
		}
	}
	return h, idx, true
}

// batchAt reports whether a batch header with the given base offset sits at pos.
func (l *PartitionLog) batchAt(seg *segment, pos, offset int64) bool {
	var hb [batch.HeaderSize]byte
	if readFull(seg.f, hb[:], pos) != nil {
		return false
	}
	h, err := batch.ParseHeader(hb[:])
	return err == nil && h.BaseOffset == offset
}

func readSmallFile(fsys FS, path string) ([]byte, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	n := f.Size()
	if n > maxIndexFileBytes {
		return nil, errBadIndex
	}
	b := make([]byte, n)
	return b, readFull(f, b, 0)
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
