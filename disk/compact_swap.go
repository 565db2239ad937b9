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

// cleanSegment rewrites one closed segment without the records the key map and the
// tombstone horizon remove, and swaps the result in. A segment that loses nothing is
// left alone.
func (l *PartitionLog) cleanSegment(p *cleanPlan, cs cleanSeg, req replica.CleanRequest,
	opt CleanOptions, res *replica.CleanResult) error {
	tmp := segmentFile(l.dir, cs.base, cleanedSuffix)
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
	w := &cleanWriter{f: f, base: cs.base, interval: interval, idx: newSegIndex(),
		throttle: opt.Throttle}
	removed, err := l.writeCleaned(p, cs, req, opt, res, w)
	changed := removed > 0 || w.pos != cs.size
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
	if err := l.swapIn(p, cs, w); err != nil {
		return err
	}
	res.Segments++
	res.BytesBefore += cs.size
	res.BytesAfter += w.pos
	res.RecordsRemoved += removed
	return nil
}

// writeCleaned writes the kept batches of cs to w and returns how many records it
// removed. Control and transactional batches are kept whole. A batch that loses every
// record goes, except the last batch of its producer, kept empty for the producer
// state; runs of removed batches become one empty filler batch spanning their offsets.
func (l *PartitionLog) writeCleaned(p *cleanPlan, cs cleanSeg, req replica.CleanRequest,
	opt CleanOptions, res *replica.CleanResult, w *cleanWriter) (int64, error) {
	horizon := int64(math.MinInt64)
	if req.DeleteRetentionMs >= 0 && req.NowMs > math.MinInt64+req.DeleteRetentionMs {
		horizon = req.NowMs - req.DeleteRetentionMs
	}
	var fill filler
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
	if err == nil {
		err = flushFill()
	}
	return removed, err
}

// swapIn makes the cleaned file the segment: rename to .swap and fsync the directory
// (from then on recovery finishes the swap), remove the old index files (they certify
// the old bytes), rename over the .log, and replace the in-memory segment. fileMu keeps
// truncation, removal, Close and index writes out for the duration, so the segment
// recovery would swap in is the one the cleaner read.
func (l *PartitionLog) swapIn(p *cleanPlan, cs cleanSeg, w *cleanWriter) error {
	tmp := segmentFile(l.dir, cs.base, cleanedSuffix)
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	l.mu.Lock()
	ok := l.stillThereLocked(cs) && l.truncations == p.truncations
	if ok {
		cs.seg.indexFailed = true // its index files go now; none may be written again
	}
	l.mu.Unlock()
	if !ok {
		_ = l.fs.Remove(tmp)
		return errCleanAborted
	}
	swap := segmentFile(l.dir, cs.base, swapSuffix)
	if err := l.fs.Rename(tmp, swap); err != nil {
		_ = l.fs.Remove(tmp)
		return fmt.Errorf("clean %s: %w", l.dir, err)
	}
	err := removeIndexFiles(l.fs, l.dir, cs.base)
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
	name := segmentFile(l.dir, cs.base, logSuffix)
	if err := l.fs.Rename(swap, name); err != nil {
		// The .swap stays: recovery finishes it. Until then the old bytes are served.
		l.dirChanges++
		return l.goOffline(fmt.Errorf("swap cleaned segment %d: %w", cs.base, err))
	}
	l.dirChanges++
	nf, err := l.fs.OpenFile(name)
	if err != nil {
		return l.goOffline(fmt.Errorf("reopen cleaned segment %d: %w", cs.base, err))
	}
	ns := &segment{base: cs.base, f: nf, size: w.pos, next: cs.next,
		createdMs: cs.seg.createdMs, idx: w.idx, sealed: true, synced: w.pos,
		truncFloor: w.pos}
	l.segs[slices.Index(l.segs, cs.seg)] = ns
	_ = cs.seg.f.Close()
	return nil
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
