package disk

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// cleanWriter writes a cleaned segment to its .cleaned file, buffered, and indexes it.
type cleanWriter struct {
	f        File
	base     int64
	interval int
	pos      int64
	buf      []byte
	idx      segIndex
	throttle func(int) error
}

func (w *cleanWriter) add(b []byte) error {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return err
	}
	w.idx.add(&h, w.base, w.pos, w.interval)
	w.pos += int64(len(b))
	w.buf = append(w.buf, b...)
	if len(w.buf) >= cleanWriteChunk {
		return w.flush()
	}
	return nil
}

func (w *cleanWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.f.Write(w.buf)
	if err == nil && n != len(w.buf) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(w.buf))
	}
	if w.throttle != nil && err == nil {
		err = w.throttle(len(w.buf))
	}
	w.buf = w.buf[:0]
	return err
}

// cleanSegments rewrites a run of consecutive closed segments (cleanGroups) into one,
// without the records the key map and the tombstone horizon remove, and swaps the
// result in. A single segment that loses nothing is left alone.
func (l *PartitionLog) cleanSegments(p *cleanPlan, g []cleanSeg, req replica.CleanRequest,
	opt CleanOptions, res *replica.CleanResult) error {
	first := g[0]
	tmp := segmentFile(l.dir, first.base, cleanedSuffix)
	if err := l.fs.Remove(tmp); err != nil && !isNotExist(err) {
		return err
	}
	f, err := l.fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("clean %s: %w", l.dir, err)
	}
	l.mu.Lock()
	interval := l.cfg.IndexInterval
	l.mu.Unlock()
	w := &cleanWriter{f: f, base: first.base, interval: interval, idx: newSegIndex(),
		throttle: opt.Throttle}
	var fill filler // a run of removed batches may go on into the next segment
	var removed, size int64
	for _, cs := range g {
		if err == nil {
			var n int64
			n, err = l.writeCleaned(p, cs, req, opt, res, w, &fill)
			removed += n
		}
		size += cs.size
	}
	if b := fill.take(); b != nil && err == nil {
		err = w.add(b)
	}
	changed := removed > 0 || w.pos != size || len(g) > 1
	if err == nil && changed {
		err = w.flush()
		if err == nil {
			err = f.Sync()
		}
	}
	_ = f.Close()
	if err != nil || !changed {
		_ = l.fs.Remove(tmp)
		return err
	}
	if err := l.swapIn(p, g, w); err != nil {
		return err
	}
	res.Segments += len(g)
	res.BytesBefore += size
	res.BytesAfter += w.pos
	res.RecordsRemoved += removed
	return nil
}

// writeCleaned writes the kept batches of cs to w and returns how many records it
// removed. Control and transactional batches are kept whole. A batch that loses every
// record goes, except the last batch of its producer, kept empty for the producer
// state; runs of removed batches become one empty filler batch spanning their offsets
// (fill: the caller writes the run still open at the end).
func (l *PartitionLog) writeCleaned(p *cleanPlan, cs cleanSeg, req replica.CleanRequest,
	opt CleanOptions, res *replica.CleanResult, w *cleanWriter, fill *filler) (int64, error) {
	horizon := int64(math.MinInt64)
	if req.DeleteRetentionMs >= 0 && req.NowMs > math.MinInt64+req.DeleteRetentionMs {
		horizon = req.NowMs - req.DeleteRetentionMs
	}
	var removed int64
	flushFill := func() error {
		if b := fill.take(); b != nil {
			return w.add(b)
		}
		return nil
	}
	err := l.eachBatch(cs, opt, res, func(h *batch.Header, b []byte) error {
		if h.IsControl() || h.IsTransactional() {
			if err := flushFill(); err != nil {
				return err
			}
			return w.add(b)
		}
		recs, err := batchRecords(b, h, opt.Codec)
		if err != nil {
			return err
		}
		kept := make([]rawRecord, 0, len(recs))
		for _, r := range recs {
			if r.key != nil {
				last, ok := p.keys[string(r.key)]
				if ok && (last > r.offset ||
					(last == r.offset && mutantOn("clean-drops-last-value"))) {
					continue
				}
				if r.tombstone && h.MaxTimestamp < horizon {
					continue
				}
			}
			kept = append(kept, r)
		}
		removed += int64(len(recs) - len(kept))
		if len(recs) == 0 && !(h.HasProducer() && p.lastOfPid[h.ProducerID] == h.BaseOffset) {
			// An empty batch an earlier clean left (a filler, or a producer's batch that
			// is no longer its last): it joins the run, so runs do not pile up.
			kept = nil
		} else if len(kept) == len(recs) {
			if err := flushFill(); err != nil {
				return err
			}
			return w.add(b)
		}
		if len(kept) == 0 && !(h.HasProducer() && p.lastOfPid[h.ProducerID] == h.BaseOffset) {
			if !fill.add(h) {
				if err := flushFill(); err != nil {
					return err
				}
				fill.add(h)
			}
			return nil
		}
		if err := flushFill(); err != nil {
			return err
		}
		nb, err := rebuildBatch(h, kept, opt.Codec)
		if err != nil {
			return err
		}
		return w.add(nb)
	})
	return removed, err
}

// swapIn makes the cleaned file the segment of the run g: rename to .swap and fsync the
// directory (from then on recovery finishes the swap), remove the old index files (they
// certify the old bytes), rename over the first segment's .log, replace the in-memory
// segments, and remove the files of the others (recovery drops any left: their offsets
// are inside the swapped-in segment). fileMu keeps truncation, removal, Close and index
// writes out for the duration, so the segments recovery would replace are the ones the
// cleaner read.
func (l *PartitionLog) swapIn(p *cleanPlan, g []cleanSeg, w *cleanWriter) error {
	first, last := g[0], g[len(g)-1]
	tmp := segmentFile(l.dir, first.base, cleanedSuffix)
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	if !l.markSwapping(p, g) {
		_ = l.fs.Remove(tmp)
		return errCleanAborted
	}
	swap := segmentFile(l.dir, first.base, swapSuffix)
	if err := l.fs.Rename(tmp, swap); err != nil {
		_ = l.fs.Remove(tmp)
		return fmt.Errorf("clean %s: %w", l.dir, err)
	}
	var err error
	for _, cs := range g {
		if err == nil {
			err = removeIndexFiles(l.fs, l.dir, cs.base)
		}
	}
	if err == nil {
		err = l.fs.SyncDir(l.dir)
	}
	if err != nil {
		return l.undoSwap(swap, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.failed != nil {
		return errCleanAborted // the .swap is durable: recovery finishes it
	}
	name := segmentFile(l.dir, first.base, logSuffix)
	if err := l.fs.Rename(swap, name); err != nil {
		// The .swap stays: recovery finishes it. Until then the old bytes are served.
		l.dirChanges++
		return l.goOffline(fmt.Errorf("swap cleaned segment %d: %w", first.base, err))
	}
	l.dirChanges++
	nf, err := l.fs.OpenFile(name)
	if err != nil {
		return l.goOffline(fmt.Errorf("reopen cleaned segment %d: %w", first.base, err))
	}
	ns := &segment{base: first.base, f: nf, size: w.pos, next: last.next,
		createdMs: first.seg.createdMs, idx: w.idx, sealed: true, synced: w.pos,
		truncFloor: w.pos}
	i := slices.Index(l.segs, first.seg)
	l.segs = slices.Replace(l.segs, i, i+len(g), ns)
	_ = first.seg.f.Close()
	for _, cs := range g[1:] {
		if err := l.removeSegment(cs.seg); err != nil {
			return l.goOffline(fmt.Errorf("remove segment %d merged into %d: %w", cs.base,
				first.base, err))
		}
	}
	return nil
}

// markSwapping checks that the run g is still what the cleaner read, consecutive in the
// log, and marks its segments so that no index file of theirs is written again (they go
// now).
func (l *PartitionLog) markSwapping(p *cleanPlan, g []cleanSeg) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.truncations != p.truncations {
		return false
	}
	i := slices.Index(l.segs, g[0].seg)
	for k, cs := range g {
		if !l.stillThereLocked(cs) || i < 0 || i+k >= len(l.segs) || l.segs[i+k] != cs.seg ||
			(i+k == len(l.segs)-1 && !mutantOn("clean-active-segment")) {
			return false // never the active segment
		}
	}
	for _, cs := range g {
		cs.seg.indexFailed = true
	}
	return true
}

// undoSwap removes a .swap whose swap could not go on. If it cannot be removed for
// sure, the log goes offline: recovery will finish the swap, which is valid because the
// segment did not change (fileMu is held).
func (l *PartitionLog) undoSwap(swap string, cause error) error {
	err := l.fs.Remove(swap)
	if err == nil {
		err = l.fs.SyncDir(l.dir)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dirChanges++
	if err != nil {
		failed := l.goOffline(fmt.Errorf("undo a cleaned segment's swap (%v): %w", cause, err))
		l.dropUnsynced()
		return failed
	}
	return fmt.Errorf("clean %s: %w", l.dir, cause)
}

func (l *PartitionLog) stillThereLocked(cs cleanSeg) bool {
	return !l.closed && l.failed == nil && slices.Contains(l.segs, cs.seg) &&
		cs.seg.size == cs.size
}

// finishCleaning runs first at recovery: a .cleaned file is an unfinished clean and
// goes; a .swap file is a finished one and replaces its segment (the index files of the
// old bytes go first). It reports whether it changed the directory.
func (l *PartitionLog) finishCleaning(names []string) (bool, error) {
	changed := false
	for _, name := range names {
		base, ok := cleanerFileBase(name, cleanedSuffix)
		if ok {
			changed = true
			if err := l.fs.Remove(l.dir + "/" + name); err != nil && !isNotExist(err) {
				return changed, err
			}
			continue
		}
		if base, ok = cleanerFileBase(name, swapSuffix); !ok {
			continue
		}
		changed = true
		l.lg.Info("finishing the swap of a cleaned segment", zap.Int64("segment", base))
		if err := removeIndexFiles(l.fs, l.dir, base); err != nil {
			return changed, err
		}
		if err := l.fs.Rename(l.dir+"/"+name, segmentFile(l.dir, base, logSuffix)); err != nil {
			return changed, err
		}
	}
	return changed, nil
}

// cleanerFileBase parses <20 digits><suffix>.
func cleanerFileBase(name, suffix string) (int64, bool) {
	stem, ok := strings.CutSuffix(name, suffix)
	if !ok {
		return 0, false
	}
	base, _, ok := parseSegmentName(stem + logSuffix)
	return base, ok
}
