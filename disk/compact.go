package disk

import (
	"fmt"
	"io"
	"slices"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// Log compaction: Clean rewrites closed segments keeping the last record of each key
// (docs/storage.md, "Compaction"). Consecutive segments whose sizes add up to at most
// segment.bytes (segments earlier cleans shrank) are rewritten together, as Kafka's
// cleaner groups them, into <base>.log.cleaned named after the first, fsynced, renamed
// to <base>.log.swap (the commit point: recovery finishes a swap it finds, and drops
// the segments it covers) and renamed over <base>.log; the others' files go. The
// active segment is never touched.

// Suffixes of a segment being swapped in by the cleaner.
const (
	cleanedSuffix = ".log.cleaned" // being written; recovery deletes it
	swapSuffix    = ".log.swap"    // complete and durable; recovery renames it over .log
)

// keyMapEntryOverhead is what one key costs the key map beyond its bytes (map entry,
// string header, offset), for log.cleaner.dedupe.buffer.size.
const keyMapEntryOverhead = 48

// cleanWriteChunk is how many cleaned bytes are buffered before one Write.
const cleanWriteChunk = 1 << 20

// CleanOptions are the driver's hooks into a Clean.
type CleanOptions struct {
	// Codec recompresses batches the cleaner removed records from (compress.Codecs).
	Codec Codec
	// Throttle is called with the bytes read or written since its last call; the
	// runtime sleeps in it to keep log.cleaner.io.max.bytes.per.second. An error stops
	// the clean (the node is stopping). nil: none.
	Throttle func(n int) error
}

// errCleanAborted: the log changed under the cleaner (closed, offline, truncated, a
// segment removed); the clean stops, what was swapped in stays, nothing is wrong.
var errCleanAborted = replica.ErrCleanAborted

// cleanSeg is a closed segment as the cleaner saw it when it started.
type cleanSeg struct {
	seg  *segment
	size int64
	base int64
	next int64
}

// cleanPlan is what a clean works on.
type cleanPlan struct {
	segs        []cleanSeg
	start       int64
	truncations uint64
	dirtyStart  int64            // below it, at most one record per key (cleanedTo)
	mapEnd      int64            // the key map covers [dirtyStart, mapEnd)
	keys        map[string]int64 // key → offset of its last record in the mapped range
	lastOfPid   map[int64]int64  // producer id → base offset of its last batch in the log
	segBytes    int64            // segment.bytes: what a group of segments adds up to at most
}

// Clean implements replica.Cleaner with Kafka's codecs and no I/O bound.
func (l *PartitionLog) Clean(req replica.CleanRequest) (replica.CleanResult, error) {
	return l.CleanWith(req, CleanOptions{Codec: compress.Codecs{}})
}

// CleanWith cleans the closed segments below req.UpTo. It may run concurrently with
// every other method; each segment is swapped in under the log's locks after checking
// it did not change, oldest first, so a crash part way leaves a valid log.
func (l *PartitionLog) CleanWith(req replica.CleanRequest, opt CleanOptions) (
	replica.CleanResult, error) {
	res := replica.CleanResult{CleanedTo: req.DirtyStart}
	p, err := l.planClean(req)
	if err != nil || len(p.segs) == 0 {
		return res, err
	}
	req.DirtyStart = p.dirtyStart
	if err := l.producerLastBatches(p); err != nil {
		return res, err
	}
	if err := l.buildKeyMap(p, req, opt, &res); err != nil {
		return res, err
	}
	res.CleanedTo = max(p.mapEnd, req.DirtyStart)
	for _, g := range cleanGroups(p, res.CleanedTo) {
		if err := l.cleanSegments(p, g, req, opt, &res); err != nil {
			return res, err
		}
	}
	l.mu.Lock()
	if l.truncations == p.truncations {
		l.cleanedTo = max(l.cleanedTo, res.CleanedTo)
	}
	l.mu.Unlock()
	l.lg.Info("log cleaned", zap.Int("segments", res.Segments),
		zap.Int64("bytes_before", res.BytesBefore), zap.Int64("bytes_after", res.BytesAfter),
		zap.Int64("records_removed", res.RecordsRemoved), zap.Int64("cleaned_to", res.CleanedTo))
	return res, nil
}

// planClean lists the closed segments wholly below req.UpTo.
func (l *PartitionLog) planClean(req replica.CleanRequest) (*cleanPlan, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return nil, err
	}
	ds := max(min(req.DirtyStart, l.cleanedTo), l.start)
	p := &cleanPlan{start: l.start, truncations: l.truncations, dirtyStart: ds, mapEnd: ds,
		segBytes: l.cfg.SegmentBytes}
	closed := l.segs[:len(l.segs)-1]
	if mutantOn("clean-active-segment") {
		closed = l.segs
	}
	for _, s := range closed {
		if (s.next > req.UpTo || !s.sealed) && !mutantOn("clean-active-segment") {
			break
		}
		if s.next <= l.start {
			continue
		}
		p.segs = append(p.segs, cleanSeg{seg: s, size: s.size, base: s.base, next: s.next})
	}
	return p, nil
}

// cleanGroups splits the segments wholly below end (covered by the key map) into runs
// of consecutive segments rewritten as one: a run's sizes add up to at most segment.bytes
// and its offsets fit maxRelOffset (the index's relative offsets, a filler's
// lastOffsetDelta). A long-compacted log so keeps few segments, not one per segment it
// ever rolled.
func cleanGroups(p *cleanPlan, end int64) [][]cleanSeg {
	var out [][]cleanSeg
	var size int64
	for _, cs := range p.segs {
		if cs.next > end {
			break // not wholly covered by the key map
		}
		n := len(out)
		if n > 0 && size+cs.size <= p.segBytes && cs.next-1-out[n-1][0].base <= maxRelOffset &&
			!mutantOn("clean-active-segment") {
			out[n-1] = append(out[n-1], cs)
			size += cs.size
			continue
		}
		out = append(out, []cleanSeg{cs})
		size = cs.size
	}
	return out
}

// producerLastBatches finds the last batch of every producer in the log: the cleaner
// keeps it, emptied if need be, so producer state rebuilt from the log still knows the
// producer's last sequence (as Kafka's cleaner does).
func (l *PartitionLog) producerLastBatches(p *cleanPlan) error {
	p.lastOfPid = map[int64]int64{}
	return l.ScanHeaders(p.start, func(h batch.Header) error {
		if h.HasProducer() {
			p.lastOfPid[h.ProducerID] = h.BaseOffset
		}
		return nil
	})
}

// buildKeyMap maps every key of the dirty range to the offset of its last record, until
// the map would pass req.KeyMapBytes: then mapEnd stops at the segment it was filling.
func (l *PartitionLog) buildKeyMap(p *cleanPlan, req replica.CleanRequest, opt CleanOptions,
	res *replica.CleanResult) error {
	p.keys = map[string]int64{}
	budget := req.KeyMapBytes
	if budget <= 0 {
		budget = 1 << 62
	}
	var used int64
	for _, cs := range p.segs {
		if cs.next <= req.DirtyStart {
			continue
		}
		full := false
		err := l.eachBatch(cs, opt, res, func(h *batch.Header, b []byte) error {
			if h.IsControl() || h.NextOffset() <= req.DirtyStart {
				return nil
			}
			recs, err := batchRecords(b, h, opt.Codec)
			if err != nil {
				return err
			}
			for _, r := range recs {
				if r.key == nil || r.offset < req.DirtyStart {
					continue
				}
				k := string(r.key)
				if _, ok := p.keys[k]; !ok {
					if used+int64(len(k))+keyMapEntryOverhead > budget {
						full = true
						return io.EOF
					}
					used += int64(len(k)) + keyMapEntryOverhead
				}
				p.keys[k] = r.offset
			}
			return nil
		})
		if err != nil && err != io.EOF {
			return err
		}
		if full {
			l.lg.Warn("cleaner key map full (log.cleaner.dedupe.buffer.size); cleaning up to "+
				"the segment it was filling", zap.Int64("segment", cs.base),
				zap.Int64("key_map_bytes", budget))
			return nil
		}
		p.mapEnd = cs.next
	}
	return nil
}

// eachBatch calls fn with every batch of cs, checked (CRC, framing, offsets chain).
func (l *PartitionLog) eachBatch(cs cleanSeg, opt CleanOptions, res *replica.CleanResult,
	fn func(h *batch.Header, b []byte) error) error {
	sc := newChainScanner(cs.seg.f, 0, cs.size, cs.base, cs.next)
	for {
		if err := l.stillThere(cs); err != nil {
			return err
		}
		h, b, err := sc.next(true)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return l.cleanReadError(cs, err)
		}
		if _, err := batch.CheckStored(b); err != nil {
			return l.cleanReadError(cs, err)
		}
		res.BytesRead += int64(len(b))
		if opt.Throttle != nil {
			if err := opt.Throttle(len(b)); err != nil {
				return err
			}
		}
		if err := fn(&h, b); err != nil {
			return err
		}
	}
}

// cleanReadError reports a failed read of a segment being cleaned: an abort if the
// segment left the log meanwhile (its handle was closed), else the error. The cleaner
// never takes the log offline for a read: the next fetch of those bytes will.
func (l *PartitionLog) cleanReadError(cs cleanSeg, err error) error {
	if l.stillThere(cs) != nil {
		return errCleanAborted
	}
	return fmt.Errorf("clean %s: segment %d: %w", l.dir, cs.base, err)
}

// stillThere reports errCleanAborted once cs is no longer the segment the cleaner saw.
func (l *PartitionLog) stillThere(cs cleanSeg) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.failed != nil || !slices.Contains(l.segs, cs.seg) || cs.seg.size != cs.size {
		return errCleanAborted
	}
	return nil
}
