package replicatest

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// MemLog is an in-memory replica.Log: a list of segments, each a slice of whole batches.
//
// It follows the contract in replica/log.go exactly, with two simplifications: it is not
// safe for concurrent use (the harness and the simulator call Sync on the actor's own
// goroutine), and "durable" means "covered by a Sync" — Crash drops everything else, so
// tests can check what survives a crash.
//
// Segments roll by SegmentBytes and SegmentMs as a real log does, and additionally after
// BatchesPerSegment batches when that is positive, so retention tests need not write
// megabytes.
type MemLog struct {
	// BatchesPerSegment, when > 0, rolls the active segment once it holds this many
	// batches.
	BatchesPerSegment int
	// AppendErr, SyncErr and SnapshotErr, when set, are returned by the next and every
	// later Append, Sync and SaveSnapshot (fault injection). The log stays unchanged.
	AppendErr, SyncErr, SnapshotErr error

	// Syncs counts Sync calls; Closed reports whether Close was called since the last
	// Reopen.
	Syncs  int
	Closed bool

	cfg       replica.SegmentConfig
	segments  []*segment // oldest first; never empty; the last one is active
	start     int64      // log start offset
	synced    int64      // EndOffset covered by the last successful Sync
	snapshots []snapshot // oldest first
	epochs    []byte     // the stored leader-epoch cache (nil: none)
}

type segment struct {
	base      int64
	createdMs int64
	size      int64
	batches   []stored
}

type stored struct {
	h    batch.Header
	data []byte
}

type snapshot struct {
	offset int64
	data   []byte
}

// maxSnapshots bounds the snapshots kept; older ones are dropped as a real store would.
const maxSnapshots = 8

// ErrClosed is returned by every operation on a closed log.
var ErrClosed = errors.New("memlog: closed")

// NewMemLog returns an empty log configured with cfg.
func NewMemLog(cfg replica.SegmentConfig) *MemLog {
	return &MemLog{cfg: cfg, segments: []*segment{{}}}
}

// Reopen marks a closed log open again, as reopening the same directory would.
func (l *MemLog) Reopen(cfg replica.SegmentConfig) {
	l.Closed = false
	l.cfg = cfg
}

// Crash drops every batch a successful Sync did not cover, as losing the page cache
// would. Whole segments left empty stay, as their files would.
func (l *MemLog) Crash() {
	for _, s := range l.segments {
		kept := s.batches[:0]
		s.size = 0
		for _, b := range s.batches {
			if b.h.NextOffset() <= l.synced {
				kept = append(kept, b)
				s.size += int64(len(b.data))
			}
		}
		s.batches = kept
	}
	// Drop empty segments after the last non-empty one, keeping one active segment.
	for len(l.segments) > 1 && len(l.active().batches) == 0 {
		l.segments = l.segments[:len(l.segments)-1]
	}
	if a := l.active(); len(a.batches) == 0 && len(l.segments) == 1 {
		a.base = max(l.synced, a.base)
	}
	l.start = min(l.start, l.EndOffset())
}

// Config returns the segment settings last applied.
func (l *MemLog) Config() replica.SegmentConfig { return l.cfg }

// Batches returns a copy of every retained batch's bytes, oldest first.
func (l *MemLog) Batches() [][]byte {
	var out [][]byte
	for _, s := range l.segments {
		for _, b := range s.batches {
			out = append(out, append([]byte(nil), b.data...))
		}
	}
	return out
}

func (l *MemLog) active() *segment { return l.segments[len(l.segments)-1] }

// StartOffset implements replica.Log.
func (l *MemLog) StartOffset() int64 { return l.start }

// EndOffset implements replica.Log.
func (l *MemLog) EndOffset() int64 {
	a := l.active()
	if n := len(a.batches); n > 0 {
		return a.batches[n-1].h.NextOffset()
	}
	return a.base
}

// Append implements replica.Log.
func (l *MemLog) Append(nowMs int64, h batch.Header, b []byte) error {
	if l.Closed {
		return ErrClosed
	}
	if l.AppendErr != nil {
		return l.AppendErr
	}
	if h.BaseOffset != l.EndOffset() {
		return fmt.Errorf("memlog: append at %d, end offset is %d", h.BaseOffset, l.EndOffset())
	}
	if h.Size() != len(b) {
		return fmt.Errorf("memlog: header says %d bytes, have %d", h.Size(), len(b))
	}
	if l.shouldRoll(nowMs, len(b)) {
		l.segments = append(l.segments, &segment{base: h.BaseOffset, createdMs: nowMs})
	}
	a := l.active()
	if len(a.batches) == 0 {
		a.base, a.createdMs = h.BaseOffset, nowMs
	}
	a.batches = append(a.batches, stored{h: h, data: append([]byte(nil), b...)})
	a.size += int64(len(b))
	return nil
}

func (l *MemLog) shouldRoll(nowMs int64, n int) bool {
	a := l.active()
	if len(a.batches) == 0 {
		return false
	}
	switch {
	case l.BatchesPerSegment > 0 && len(a.batches) >= l.BatchesPerSegment:
		return true
	case l.cfg.SegmentBytes > 0 && a.size+int64(n) > l.cfg.SegmentBytes:
		return true
	case l.cfg.SegmentMs > 0 && nowMs-a.createdMs >= l.cfg.SegmentMs:
		return true
	}
	return false
}

// each calls fn for every retained batch that ends after from, oldest first, until fn
// returns false.
func (l *MemLog) each(from int64, fn func(b *stored) bool) {
	for _, s := range l.segments {
		for i := range s.batches {
			if s.batches[i].h.NextOffset() <= from {
				continue
			}
			if !fn(&s.batches[i]) {
				return
			}
		}
	}
}

// Read implements replica.Log.
func (l *MemLog) Read(offset int64, maxBytes int, upTo int64) ([]byte, error) {
	if l.Closed {
		return nil, ErrClosed
	}
	if offset < l.start || offset >= l.EndOffset() {
		return nil, fmt.Errorf("memlog: read at %d outside [%d, %d)", offset, l.start,
			l.EndOffset())
	}
	var out []byte
	l.each(offset, func(b *stored) bool {
		if b.h.NextOffset() > upTo {
			return false
		}
		if len(out) > 0 && len(out)+len(b.data) > maxBytes {
			return false
		}
		out = append(out, b.data...)
		return true
	})
	return out, nil
}

// OffsetForTimestamp implements replica.Log.
func (l *MemLog) OffsetForTimestamp(ts int64) (int64, bool, error) {
	if l.Closed {
		return 0, false, ErrClosed
	}
	off, found := int64(-1), false
	l.each(l.start, func(b *stored) bool {
		if b.h.MaxTimestamp >= ts {
			off, found = b.h.BaseOffset, true
			return false
		}
		return true
	})
	return off, found, nil
}

// MaxTimestamp implements replica.Log.
func (l *MemLog) MaxTimestamp() (int64, int64) {
	ts, off := int64(-1), int64(-1)
	l.each(l.start, func(b *stored) bool {
		if b.h.MaxTimestamp > ts {
			ts, off = b.h.MaxTimestamp, b.h.BaseOffset
		}
		return true
	})
	return ts, off
}

// Segments implements replica.Log.
func (l *MemLog) Segments() []replica.SegmentInfo {
	out := make([]replica.SegmentInfo, 0, len(l.segments))
	for _, s := range l.segments {
		info := replica.SegmentInfo{BaseOffset: s.base, EndOffset: s.base, SizeBytes: s.size,
			MaxTimestamp: -1, CreatedMs: s.createdMs}
		for _, b := range s.batches {
			info.EndOffset = b.h.NextOffset()
			info.MaxTimestamp = max(info.MaxTimestamp, b.h.MaxTimestamp)
		}
		out = append(out, info)
	}
	return out
}

// DeleteSegmentsBelow implements replica.Log.
func (l *MemLog) DeleteSegmentsBelow(offset int64) error {
	if l.Closed {
		return ErrClosed
	}
	n := 0
	for n < len(l.segments)-1 && l.segmentEnd(l.segments[n]) <= offset {
		n++
	}
	l.segments = append([]*segment(nil), l.segments[n:]...)
	l.start = max(l.start, l.segments[0].base)
	return nil
}

// TruncateTo implements replica.Log: what is left is durable on return, and the cut
// batches never come back.
func (l *MemLog) TruncateTo(offset int64) (int64, error) {
	if l.Closed {
		return 0, ErrClosed
	}
	if offset >= l.EndOffset() {
		return l.EndOffset(), nil
	}
	if offset < l.start {
		return 0, fmt.Errorf("memlog: truncate to %d below start offset %d", offset, l.start)
	}
	i := len(l.segments) - 1
	for i > 0 && l.segments[i].base > offset {
		i--
	}
	seg := l.segments[i]
	k := 0
	for k < len(seg.batches) && seg.batches[k].h.NextOffset() <= offset {
		k++
	}
	newEnd := seg.base
	if k < len(seg.batches) {
		newEnd = seg.batches[k].h.BaseOffset
	} else if k > 0 {
		newEnd = seg.batches[k-1].h.NextOffset()
	}
	if newEnd < l.start {
		return 0, fmt.Errorf("memlog: truncate to %d cuts the batch at %d below start %d",
			offset, newEnd, l.start)
	}
	seg.batches = seg.batches[:k]
	seg.size = 0
	for _, b := range seg.batches {
		seg.size += int64(len(b.data))
	}
	l.segments = l.segments[:i+1]
	l.synced = newEnd // what is left is durable on return, as on disk
	kept := l.snapshots[:0]
	for _, sn := range l.snapshots {
		if sn.offset <= newEnd {
			kept = append(kept, sn)
		}
	}
	l.snapshots = kept
	return newEnd, nil
}

func (l *MemLog) segmentEnd(s *segment) int64 {
	if n := len(s.batches); n > 0 {
		return s.batches[n-1].h.NextOffset()
	}
	return s.base
}

// ResetTo implements replica.Log: the log is empty at offset, durably, on return.
func (l *MemLog) ResetTo(offset int64, nowMs int64) error {
	if l.Closed {
		return ErrClosed
	}
	if offset < 0 {
		return fmt.Errorf("memlog: reset to a negative offset %d", offset)
	}
	l.segments = []*segment{{base: offset, createdMs: nowMs}}
	l.start, l.synced, l.snapshots = offset, offset, nil
	return nil
}

// SetStartOffset implements replica.Log.
func (l *MemLog) SetStartOffset(offset int64) error {
	if l.Closed {
		return ErrClosed
	}
	if offset < l.start || offset > l.EndOffset() {
		return fmt.Errorf("memlog: start offset %d outside [%d, %d]", offset, l.start,
			l.EndOffset())
	}
	l.start = offset
	return nil
}

// ScanHeaders implements replica.Log.
func (l *MemLog) ScanHeaders(from int64, fn func(h batch.Header) error) error {
	if l.Closed {
		return ErrClosed
	}
	var err error
	l.each(from, func(b *stored) bool {
		err = fn(b.h)
		return err == nil
	})
	return err
}

// Sync implements replica.Log: it counts the call and marks everything appended so far
// durable (see Crash).
func (l *MemLog) Sync() error {
	l.Syncs++
	if l.Closed {
		return ErrClosed
	}
	if l.SyncErr != nil {
		return l.SyncErr
	}
	l.synced = l.EndOffset()
	return nil
}

// Synced returns the end offset the last successful Sync covered.
func (l *MemLog) Synced() int64 { return l.synced }

// SaveSnapshot implements replica.Log.
func (l *MemLog) SaveSnapshot(offset int64, data []byte) error {
	if l.Closed {
		return ErrClosed
	}
	if l.SnapshotErr != nil {
		return l.SnapshotErr
	}
	l.snapshots = append(l.snapshots, snapshot{offset, append([]byte(nil), data...)})
	sort.SliceStable(l.snapshots, func(i, j int) bool {
		return l.snapshots[i].offset < l.snapshots[j].offset
	})
	// Keep the newest maxSnapshots and the newest at or below the start, as disk does.
	floor := -1
	for i, sn := range l.snapshots {
		if sn.offset <= l.start {
			floor = i
		}
	}
	kept := l.snapshots[:0]
	for i, sn := range l.snapshots {
		if i == floor || i >= len(l.snapshots)-maxSnapshots {
			kept = append(kept, sn)
		}
	}
	l.snapshots = kept
	return nil
}

// LoadSnapshot implements replica.Log: the newest snapshot not beyond the log's end.
func (l *MemLog) LoadSnapshot() (int64, []byte, bool, error) {
	return l.LoadSnapshotAtMost(math.MaxInt64)
}

// LoadSnapshotAtMost implements replica.Log: the newest snapshot at or below limit and
// the log's end.
func (l *MemLog) LoadSnapshotAtMost(limit int64) (int64, []byte, bool, error) {
	if l.Closed {
		return 0, nil, false, ErrClosed
	}
	for i := len(l.snapshots) - 1; i >= 0; i-- {
		if s := l.snapshots[i]; s.offset <= min(l.EndOffset(), limit) {
			return s.offset, append([]byte(nil), s.data...), true, nil
		}
	}
	return 0, nil, false, nil
}

// SaveLeaderEpochs implements replica.Log.
func (l *MemLog) SaveLeaderEpochs(data []byte) error {
	if l.Closed {
		return ErrClosed
	}
	l.epochs = append([]byte(nil), data...)
	return nil
}

// LoadLeaderEpochs implements replica.Log.
func (l *MemLog) LoadLeaderEpochs() ([]byte, bool, error) {
	if l.Closed {
		return nil, false, ErrClosed
	}
	return append([]byte(nil), l.epochs...), l.epochs != nil, nil
}

// Configure implements replica.Log.
func (l *MemLog) Configure(c replica.SegmentConfig) { l.cfg = c }

// Close implements replica.Log. It does not sync.
func (l *MemLog) Close() error {
	l.Closed = true
	return nil
}

var _ replica.Log = (*MemLog)(nil)

// Clean implements replica.Cleaner without removing anything: MemLog keeps every batch
// (the broker's scheduling is what tests of it look at; disk.PartitionLog compacts).
func (l *MemLog) Clean(req replica.CleanRequest) (replica.CleanResult, error) {
	return replica.CleanResult{CleanedTo: req.UpTo}, nil
}
