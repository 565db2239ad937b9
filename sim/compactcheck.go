package sim

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core/batch"
)

// The compaction checker (docs/simulation.md, "Compaction"). Every write is known by
// its id (header "w"); its offset becomes known when it is acknowledged or first read.
// Each record a read returns must be a write that was sent, with that key and value
// (compaction-phantom), at an offset above the read's previous one
// (compaction-offsets), and at the offset its write was acknowledged at or first seen
// at, no other write ever having been seen there (compaction-offset-moved). Each read
// that reached at least the highest high-water mark it was told of is then checked:
//
//   - compaction-lag: a write with a known offset below the read's end is missing
//     although it was sent less than min.compaction.lag.ms before the fetch that
//     covered its offset (less twice the clock skew bound: the broker judges by its
//     own clock and the record's timestamp);
//   - compaction-latest-lost: for each key, the read's last record of the key is below
//     the highest known offset of a write of that key (or there is none), and no
//     tombstone of the key that may have been written at or above that offset (known
//     there, or with its offset unknown) is old enough to have been removed: sent
//     delete.retention.ms (less twice the skew) before the read ended. A read from the
//     log start may also meet a clean between two fetches, which the same excuse
//     covers: the values it read before the clean were superseded by such a tombstone.
//
// Writes whose outcome is unknown are never required, and count as possible latest
// tombstones. Where acknowledged writes may be lost by design (log.flush.policy=never,
// disk loss striking the last ISR member, unclean leader election) only the phantom and
// increasing-offset checks run.

// cWrite is one write of the compaction workload.
type cWrite struct {
	id     int
	key    int
	tomb   bool
	sent   int64 // virtual ns
	offset int64 // acknowledged or first read at; -1 unknown
	acked  bool
}

func (wr *cWrite) value() []byte {
	if wr.tomb {
		return nil
	}
	return []byte(compactKey(wr.key) + ".w" + strconv.Itoa(wr.id))
}

func (wr *cWrite) String() string {
	kind := "value"
	if wr.tomb {
		kind = "tombstone"
	}
	how := "read"
	if wr.acked {
		how = "acknowledged"
	}
	return fmt.Sprintf("write %d (%s of key %d, sent at %s, %s at offset %d)", wr.id, kind,
		wr.key, fmtTime(wr.sent), how, wr.offset)
}

// CompactStats counts the compaction workload's work (Stats.Compact).
type CompactStats struct {
	Writes, Acked, Unknown int
	Reads, Checked         int // reads begun, reads checked
	Abandoned              int // reads that ran out of time during the faults
	Cleans, Segments       int // cleans of the compacted partition that swapped segments in, and how many
	RecordsRemoved         int64
}

// compactState is the workload's shared state and checker.
type compactState struct {
	w       *World
	spec    CompactSpec
	writer  *cWriter
	created bool
	writes  []*cWrite
	byKey   [][]*cWrite
	owner   map[int64]int // offset → id of the write seen there
	lossy   bool
	marginN int64 // twice the clock skew bound
	stats   CompactStats
}

func newCompactState(w *World) *compactState {
	s := &compactState{w: w, spec: w.cfg.Compact, owner: map[int64]int{},
		marginN: 2 * w.cfg.Faults.ClockSkewMs * ms}
	s.byKey = make([][]*cWrite, s.spec.Keys)
	s.lossy = w.cfg.Broker["log.flush.policy"] == "never" || w.cfg.Faults.DiskLossLastISR ||
		w.cfg.Broker["unclean.leader.election.enable"] == "true"
	return s
}

func (s *compactState) newWrite(key int, tomb bool, now int64) *cWrite {
	wr := &cWrite{id: len(s.writes), key: key, tomb: tomb, sent: now, offset: -1}
	s.writes = append(s.writes, wr)
	s.byKey[key] = append(s.byKey[key], wr)
	s.stats.Writes++
	return wr
}

func (s *compactState) anomaly(kind, format string, args ...any) {
	s.w.fail("anomaly", "%s %s: %s", kind, compactTP, fmt.Sprintf(format, args...))
}

// acked records an acknowledged write's offset.
func (s *compactState) acked(wr *cWrite, offset int64) {
	s.stats.Acked++
	if wr.offset >= 0 && wr.offset != offset && !s.lossy {
		s.anomaly("compaction-offset-moved", "%s acknowledged at offset %d", wr, offset)
	}
	wr.offset, wr.acked = offset, true
	s.claim(wr, offset)
}

// claim notes that wr sits at offset; another write seen there before is an anomaly.
func (s *compactState) claim(wr *cWrite, offset int64) {
	if id, ok := s.owner[offset]; ok && id != wr.id && !s.lossy {
		s.anomaly("compaction-offset-moved", "offset %d holds %s, but %s was there before",
			offset, wr, s.writes[id])
	}
	s.owner[offset] = wr.id
}

// logStart: nothing moves a compacted topic's log start here (no DeleteRecords, no
// retention that expires within a run, no rot: rot.go leaves the topic alone).
func (s *compactState) logStart(who string, start int64) {
	if start > 0 && !s.lossy {
		s.anomaly("compaction-log-start-moved", "%s was told the log starts at %d", who, start)
	}
}

// cRead is one read from the log start.
type cRead struct {
	started int64
	final   bool
	pos     int64
	maxHWM  int64
	lastOff int64
	recs    []cRec
	covered []cSpan // what each fetch covered, in order
}

type cRec struct {
	offset int64
	id     int
}

// cSpan: a fetch answered at `at` took the read's position up to `to`.
type cSpan struct{ to, at int64 }

func (s *compactState) newRead(now int64, final bool) *cRead {
	s.stats.Reads++
	return &cRead{started: now, final: final, lastOff: -1}
}

// coveredAt is when the fetch that read offset off was answered.
func (rd *cRead) coveredAt(off int64) int64 {
	i := sort.Search(len(rd.covered), func(i int) bool { return rd.covered[i].to > off })
	if i == len(rd.covered) {
		return rd.covered[len(rd.covered)-1].at
	}
	return rd.covered[i].at
}

// fetched takes one fetch's batches into the read; false: a bad batch (reported).
func (s *compactState) fetched(rd *cRead, raw []byte, hwm, now int64) bool {
	rd.maxHWM = max(rd.maxHWM, hwm)
	from := rd.pos
	for len(raw) >= batch.HeaderSize {
		h, err := batch.ParseHeader(raw)
		if err != nil {
			s.w.failDecode(fmt.Sprintf("compact-reader: fetch of %s at %d", compactTP, rd.pos),
				err)
			return false
		}
		if h.Size() > len(raw) {
			break // a partial batch at the end
		}
		b := raw[:h.Size()]
		raw = raw[h.Size():]
		if err := checkServedCRC(b); err != nil {
			s.w.failDecode(fmt.Sprintf("compact-reader: fetch of %s at %d", compactTP, rd.pos),
				err)
			return false
		}
		if h.NextOffset() <= rd.pos {
			continue // a batch that begins below the position asked for
		}
		if err := s.records(rd, b, h); err != nil {
			s.w.failDecode(fmt.Sprintf("compact-reader: batch at offset %d of %s",
				h.BaseOffset, compactTP), err)
			return false
		}
		rd.pos = h.NextOffset()
	}
	if rd.pos > from {
		rd.covered = append(rd.covered, cSpan{to: rd.pos, at: now})
	}
	return true
}

// records checks each record of one batch (the cleaner keeps the offset deltas of the
// records it keeps, so they need not run 0, 1, 2 …).
func (s *compactState) records(rd *cRead, b []byte, h batch.Header) error {
	return eachStoredRecord(b, h, func(off int64, r *kmsg.Record) error {
		if off >= h.NextOffset() {
			return fmt.Errorf("record at offset %d past the batch's end %d", off,
				h.NextOffset())
		}
		if off >= rd.pos {
			s.record(rd, off, r)
		}
		return nil
	})
}

// eachStoredRecord calls fn with each record of a stored batch (compressed or not,
// thinned by a cleaner or not) and its offset.
func eachStoredRecord(b []byte, h batch.Header, fn func(off int64, r *kmsg.Record) error) error {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		return err
	}
	body := rb.Records
	if codec := int8(rb.Attributes & batch.AttrCompressionMask); codec != 0 {
		var err error
		if body, err = (compress.Codecs{}).Decompress(codec, body, decodeMaxBytes); err != nil {
			return err
		}
	}
	for i := int32(0); i < rb.NumRecords; i++ {
		var r kmsg.Record
		if err := r.ReadFrom(body); err != nil {
			return fmt.Errorf("record %d of %d: %w", i, rb.NumRecords, err)
		}
		body = body[varintSize(int64(r.Length))+int(r.Length):]
		if err := fn(h.BaseOffset+int64(r.OffsetDelta), &r); err != nil {
			return err
		}
	}
	return nil
}

// record checks one record a read returned.
func (s *compactState) record(rd *cRead, off int64, r *kmsg.Record) {
	if off <= rd.lastOff {
		s.anomaly("compaction-offsets", "a read from the log start returned offset %d "+
			"after offset %d", off, rd.lastOff)
	}
	rd.lastOff = max(rd.lastOff, off)
	id := -1
	for _, hd := range r.Headers {
		if hd.Key == "w" {
			if n, err := strconv.Atoi(string(hd.Value)); err == nil {
				id = n
			}
		}
	}
	if id < 0 || id >= len(s.writes) {
		s.anomaly("compaction-phantom", "offset %d holds a record no write sent (key %q, "+
			"header w=%d)", off, r.Key, id)
		return
	}
	wr := s.writes[id]
	if string(r.Key) != compactKey(wr.key) || (r.Value == nil) != wr.tomb ||
		!bytes.Equal(r.Value, wr.value()) {
		s.anomaly("compaction-phantom", "offset %d holds key %q value %q, but %s wrote "+
			"key %q value %q", off, r.Key, r.Value, wr, compactKey(wr.key), wr.value())
		return
	}
	if wr.offset >= 0 && wr.offset != off && !s.lossy {
		s.anomaly("compaction-offset-moved", "%s read at offset %d", wr, off)
	}
	if wr.offset < 0 {
		wr.offset = off
	}
	s.claim(wr, off)
	rd.recs = append(rd.recs, cRec{offset: off, id: id})
}

// check runs the per-key checks of a read that reached the highest high-water mark it
// was told of.
func (s *compactState) check(rd *cRead, now int64) {
	s.stats.Checked++
	s.w.tr.note("compact-read", rd.pos, int64(len(rd.recs)))
	if s.lossy {
		return
	}
	present := make(map[int64]bool, len(rd.recs))
	last := make([]int64, s.spec.Keys) // offset of the key's last record read; -1 none
	for i := range last {
		last[i] = -1
	}
	for _, r := range rd.recs {
		present[r.offset] = true
		last[s.writes[r.id].key] = r.offset
	}
	lag, keep := s.spec.LagMs*ms-s.marginN, s.spec.RetentionMs*ms-s.marginN
	for key, ws := range s.byKey {
		var latest *cWrite
		for _, wr := range ws {
			if wr.offset < 0 || wr.offset >= rd.pos {
				continue
			}
			if !present[wr.offset] && rd.coveredAt(wr.offset)-wr.sent < lag {
				s.anomaly("compaction-lag", "%s is gone from a read from the log start "+
					"%dms after it was sent (min.compaction.lag.ms=%d)", wr,
					(rd.coveredAt(wr.offset)-wr.sent)/ms, s.spec.LagMs)
			}
			if latest == nil || wr.offset > latest.offset {
				latest = wr
			}
		}
		if latest == nil || last[key] >= latest.offset || s.tombstoneExcuse(ws, latest, now-keep) {
			continue
		}
		what := "no record of the key"
		if last[key] >= 0 {
			what = "its last record at offset " + strconv.FormatInt(last[key], 10)
		}
		s.anomaly("compaction-latest-lost", "a read from the log start (begun at %s, "+
			"ended at %s up to offset %d) has %s, but the latest known is %s and no "+
			"tombstone of the key is %dms old (delete.retention.ms=%d)", fmtTime(rd.started),
			fmtTime(now), rd.pos, what, latest, keep/ms, s.spec.RetentionMs)
	}
}

// tombstoneExcuse: a tombstone of the key, at or after latest or at an unknown offset,
// was sent no later than sentBy: the cleaner may have removed it with everything
// before it.
func (s *compactState) tombstoneExcuse(ws []*cWrite, latest *cWrite, sentBy int64) bool {
	for _, wr := range ws {
		if wr.tomb && wr.sent <= sentBy && (wr.offset < 0 || wr.offset >= latest.offset) {
			return true
		}
	}
	return false
}

// cleaned counts a clean of the compacted partition (node.go).
func (s *compactState) cleaned(segments int, removed int64) {
	if segments > 0 {
		s.stats.Cleans++
		s.stats.Segments += segments
		s.stats.RecordsRemoved += removed
	}
}
