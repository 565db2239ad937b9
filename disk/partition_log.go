package disk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"sync"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// Defaults applied when a SegmentConfig field is zero or out of range.
const (
	defaultSegmentBytes  = 1 << 30
	defaultIndexInterval = 4096
	// maxRelOffset bounds offsets within a segment so relative offsets fit the index.
	maxRelOffset = math.MaxInt32
	// scanHeadersChunk bounds how many headers ScanHeaders collects per lock hold.
	scanHeadersChunk = 256
)

// ErrOutOfRange is returned by Read for an offset outside [StartOffset, EndOffset).
var ErrOutOfRange = errors.New("offset out of range")

// errClosed is returned by a PartitionLog used after Close.
var errClosed = errors.New("partition log closed")

// PartitionLog is one partition's segmented log; it implements replica.Log. See the
// package documentation and docs/storage.md for the format and the durability rules.
//
// Locking: mu guards all state. Sync takes mu only to snapshot what to fsync and to
// record the result, never across the fsync itself, so appends, reads, removals and
// Close continue during a group commit. fileMu serialises the writers of index files
// (a Sync's finish, Close) with the removal of segments, so no index file outlives its
// segment; none of them flushes, so nothing waits on an fsync. Lock order: fileMu
// before mu.
type PartitionLog struct {
	fs    FS
	dir   string
	state StateStore
	// volatile holds the taint mark across process restarts when state cannot (nil:
	// none; taint.go).
	volatile VolatileMarks
	prefix   string
	lg       *zap.Logger

	fileMu  sync.Mutex
	mu      sync.Mutex
	cfg     replica.SegmentConfig
	segs    []*segment // oldest first; never empty while open
	start   int64
	failed  error // non-nil once offline; wraps replica.ErrLogOffline
	closed  bool
	syncing bool // a Sync is between beginSync and endSync (D1: one at a time)
	// entryPending: the log's directory was made by this open (FS.Mkdir) and its entry
	// in the parent directory is not durable yet; the next Sync makes it durable before
	// it fsyncs any segment (docs/storage.md, "Opening a new partition").
	entryPending bool
	// bindPending: the log's topic id binding is not stored yet; the first Sync with
	// bytes to make durable stores it (claimLog).
	bindPending bool
	// dirChanges counts changes to the directory's entries (a segment created at a roll,
	// an existing directory opened: its entries' state is unknown); dirSynced is the
	// count the last successful directory fsync covered. A Sync with bytes to make
	// durable fsyncs the directory first while they differ: a segment whose entry a crash
	// may undo holds nothing acknowledged.
	dirChanges, dirSynced uint64
	// truncations counts TruncateTo calls: a clean that began before one discards its
	// work (compact.go).
	truncations uint64
	// cleanedTo is where the last clean's key map ended: offsets below it hold at most
	// one record per key. 0 after an open (the first clean maps everything), lowered
	// by TruncateTo.
	cleanedTo int64
	// rotStart is where recovery found the log must start after corrupt batches it
	// skipped (rot.go); 0 when none.
	rotStart int64
}

var _ replica.Log = (*PartitionLog)(nil)

// OpenPartitionLog opens the log in dir, creating it if needed and recovering it if it
// exists: segments after the last certified index are validated batch by batch and the
// log is truncated at the first torn, corrupt or non-contiguous byte. Node-local state
// (start offset, segment creation times, snapshots) lives in state under
// stateKeyPrefix, which must not be a prefix of another log's (end it with "/").
// nowMs stands in for the creation time of segments whose time was not recorded.
func OpenPartitionLog(fs FS, dir string, state StateStore, stateKeyPrefix string,
	cfg replica.SegmentConfig, nowMs int64, lg *zap.Logger) (*PartitionLog, error) {
	return OpenPartitionLogOpts(fs, dir, state, stateKeyPrefix, cfg, nowMs, lg, LogOptions{})
}

// OpenPartitionLogOpts is OpenPartitionLog with the optional parts of its environment.
func OpenPartitionLogOpts(fs FS, dir string, state StateStore, stateKeyPrefix string,
	cfg replica.SegmentConfig, nowMs int64, lg *zap.Logger, opts LogOptions) (*PartitionLog,
	error) {
	l := &PartitionLog{
		fs: fs, dir: dir, state: state, prefix: stateKeyPrefix, volatile: opts.Volatile,
		lg: lg.With(zap.String("log", dir)), cfg: normalizeConfig(cfg),
	}
	if _, removing, err := state.Get(removingKey(stateKeyPrefix)); err != nil {
		return nil, fmt.Errorf("open partition log %s: %w", dir, err)
	} else if removing {
		// A deleted topic's log whose removal stopped part way: finish it, so a topic
		// created later under this name starts empty.
		if err := RemovePartitionLog(fs, dir, state, stateKeyPrefix); err != nil {
			return nil, fmt.Errorf("open partition log %s: finish removing: %w", dir, err)
		}
	}
	bind, err := claimLog(fs, dir, state, stateKeyPrefix, cfg.TopicID, lg)
	if err != nil {
		return nil, fmt.Errorf("open partition log %s: %w", dir, err)
	}
	l.bindPending = bind
	if err := l.makeDir(); err != nil {
		return nil, fmt.Errorf("open partition log %s: %w", dir, err)
	}
	if err := l.recover(nowMs); err != nil {
		l.closeFiles()
		return nil, fmt.Errorf("recover partition log %s: %w", dir, err)
	}
	return l, nil
}

// makeDir creates the log's directory. A new one is made without any fsync: nothing
// acknowledged is in it until the log's first Sync, which makes its entry durable
// first. An existing one goes through MkdirAll, which makes it and its ancestors durable
// (a run killed before its first Sync left the entry unsynced); its own entries may not
// be (the same run's segment files), so recovery fsyncs it before it returns.
func (l *PartitionLog) makeDir() error {
	err := l.fs.Mkdir(l.dir)
	if err == nil {
		l.entryPending = true
		return nil
	}
	if !errors.Is(err, fs.ErrExist) && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	l.dirChanges++
	return l.fs.MkdirAll(l.dir)
}

func normalizeConfig(c replica.SegmentConfig) replica.SegmentConfig {
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = defaultSegmentBytes
	}
	c.SegmentBytes = min(c.SegmentBytes, math.MaxInt32)
	if c.SegmentMs < 0 {
		c.SegmentMs = 0
	}
	if c.IndexInterval <= 0 {
		c.IndexInterval = defaultIndexInterval
	}
	return c
}

// State keys under the log's prefix.
func (l *PartitionLog) startKey() []byte   { return []byte(l.prefix + "start") }
func (l *PartitionLog) snapPrefix() string { return l.prefix + "snap/" }
func (l *PartitionLog) createdKey(base int64) []byte {
	return fmt.Appendf(nil, "%sseg/%020d", l.prefix, base)
}

func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func (l *PartitionLog) active() *segment { return l.segs[len(l.segs)-1] }

// usable returns the error every call reports once the log is closed or offline.
func (l *PartitionLog) usable() error {
	if l.closed {
		return fmt.Errorf("%s: %w", l.dir, errClosed)
	}
	return l.failed
}

// goOffline records an unrecoverable failure; every later call reports it.
func (l *PartitionLog) goOffline(cause error) error {
	if l.failed == nil {
		l.failed = fmt.Errorf("partition log %s: %w: %w", l.dir, replica.ErrLogOffline, cause)
		l.lg.Error("partition log offline", zap.Error(cause))
	}
	return l.failed
}

// StartOffset implements replica.Log.
func (l *PartitionLog) StartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.start
}

// EndOffset implements replica.Log.
func (l *PartitionLog) EndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.active().next
}

// Append implements replica.Log: one write to the active segment, no fsync.
func (l *PartitionLog) Append(nowMs int64, h batch.Header, b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	act := l.active()
	if h.BaseOffset != act.next || len(b) != h.Size() || len(b) < batch.HeaderSize ||
		int64(binary.BigEndian.Uint64(b)) != h.BaseOffset || h.LastOffsetDelta < 0 {
		return fmt.Errorf("append to %s: batch at offset %d (%d bytes, header says %d) "+
			"does not fit end offset %d", l.dir, h.BaseOffset, len(b), h.Size(), act.next)
	}
	if l.shouldRoll(act, nowMs, &h, len(b)) {
		var err error
		if act, err = l.roll(nowMs); err != nil {
			return err
		}
	}
	if act.size == 0 {
		// segment.ms counts from the first batch; record it before the batch exists so
		// a recovered segment never looks younger than it is.
		if err := l.state.Set(l.createdKey(act.base), be64(nowMs)); err != nil {
			return fmt.Errorf("append to %s: record segment time: %w", l.dir, err)
		}
		act.createdMs = nowMs
	}
	pos := act.size
	if n, err := act.f.Write(b); err != nil || n != len(b) {
		if err == nil {
			err = fmt.Errorf("short write: %d of %d bytes", n, len(b))
		}
		if errors.Is(err, errEvictSync) {
			// An fsync the handle cache ran failed: as after a failed Sync.
			failed := l.goOffline(err)
			l.dropUnsynced()
			return failed
		}
		return l.undoWrite(act, pos, err)
	}
	act.size += int64(len(b))
	act.next = h.NextOffset()
	act.idx.add(&h, act.base, pos, l.cfg.IndexInterval)
	return nil
}

// undoWrite truncates a failed write away so the log is unchanged; if even that fails
// the file's tail is unknown and the log goes offline until recovery.
func (l *PartitionLog) undoWrite(seg *segment, pos int64, cause error) error {
	if err := seg.f.Truncate(pos); err != nil {
		return l.goOffline(fmt.Errorf("truncate after failed write (%v): %w", cause, err))
	}
	return fmt.Errorf("append to %s: %w", l.dir, cause)
}

func (l *PartitionLog) shouldRoll(act *segment, nowMs int64, h *batch.Header, n int) bool {
	if act.size == 0 {
		return false
	}
	return act.size+int64(n) > l.cfg.SegmentBytes ||
		(l.cfg.SegmentMs > 0 && nowMs-act.createdMs >= l.cfg.SegmentMs) ||
		h.LastOffset()-act.base > maxRelOffset
}

// roll seals the active segment and starts a new one at the end offset. The new file's
// entry is made durable by the next Sync (dirChanges), off the event loop; its index
// files are written by the Sync that makes the sealed segment durable.
func (l *PartitionLog) roll(nowMs int64) (*segment, error) {
	old := l.active()
	f, err := l.fs.Create(segmentFile(l.dir, old.next, logSuffix))
	if err != nil {
		return nil, fmt.Errorf("roll %s at offset %d: %w", l.dir, old.next, err)
	}
	old.sealed = true
	l.dirChanges++
	seg := &segment{base: old.next, f: f, next: old.next, createdMs: nowMs, idx: newSegIndex()}
	l.segs = append(l.segs, seg)
	return seg, nil
}

// findSegment returns the segment holding offset (binary search on base offsets).
func (l *PartitionLog) findSegment(offset int64) *segment {
	lo, hi := 0, len(l.segs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.segs[mid].base <= offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return l.segs[max(lo-1, 0)]
}

// Read implements replica.Log. The result stays within the segment holding offset, as
// Kafka's does; the caller reads on from where it ends.
func (l *PartitionLog) Read(offset int64, maxBytes int, upTo int64) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return nil, err
	}
	if offset < l.start || offset >= l.active().next {
		return nil, fmt.Errorf("read %s at %d: %w [%d, %d)", l.dir, offset, ErrOutOfRange,
			l.start, l.active().next)
	}
	seg := l.findSegment(offset)
	b, err := seg.read(offset, maxBytes, upTo, l.cfg.IndexInterval)
	if err == nil {
		err = verifyServed(b, offset, seg.next)
	}
	if isCorrupt(err) {
		err = l.rotFound(fmt.Errorf("read %s: %w: %w", l.dir, ErrCorrupt, err))
	}
	if err != nil {
		return nil, fmt.Errorf("read %s at %d: %w", l.dir, offset, err)
	}
	return b, nil
}

// OffsetForTimestamp implements replica.Log. Batches wholly below the start offset are
// skipped; a hit in the batch straddling it answers the start offset. The scan checks
// the offsets chain of the headers it walks (a rotten base offset would otherwise be
// answered) and takes the log offline on a mismatch, as Read does.
func (l *PartitionLog) OffsetForTimestamp(ts int64) (int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return 0, false, err
	}
	for _, seg := range l.segs {
		if seg.next <= l.start || seg.idx.maxTs < ts {
			continue
		}
		off, found, err := l.timeInSegment(seg, ts)
		if isCorrupt(err) {
			err = l.rotFound(fmt.Errorf("%w: %w", ErrCorrupt, err))
		}
		if err != nil {
			return 0, false, fmt.Errorf("timestamp lookup in %s: %w", l.dir, err)
		}
		if found {
			return off, true, nil
		}
	}
	return 0, false, nil
}

// timeInSegment scans seg for the first batch reaching ts that ends above the start
// offset. The scan begins at the time index's position or, when the start offset lies
// in seg, at the offset index's position for it if that is later: batches before it
// are below the start (and may include a rotten one recovery skipped).
func (l *PartitionLog) timeInSegment(seg *segment, ts int64) (int64, bool, error) {
	pos, rel := seg.idx.lookupTime(ts)
	if l.start > seg.base {
		if p, r := seg.idx.lookupOffsetEntry(uint32(l.start - seg.base)); p > pos {
			pos, rel = p, r
		}
	}
	sc := newChainScanner(seg.f, pos, seg.size, seg.base+int64(rel), seg.next)
	for {
		h, _, err := sc.next(false)
		if err == io.EOF {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		if h.MaxTimestamp >= ts && h.NextOffset() > l.start {
			return max(h.BaseOffset, l.start), true, nil
		}
	}
}

// MaxTimestamp implements replica.Log.
func (l *PartitionLog) MaxTimestamp() (int64, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts, off := int64(-1), int64(-1)
	for _, seg := range l.segs {
		if seg.idx.maxTs > ts {
			ts, off = seg.idx.maxTs, seg.idx.maxTsOff
		}
	}
	return ts, off
}

// Segments implements replica.Log.
func (l *PartitionLog) Segments() []replica.SegmentInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]replica.SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		out[i] = replica.SegmentInfo{
			BaseOffset: s.base, EndOffset: s.next, SizeBytes: s.size,
			MaxTimestamp: s.idx.maxTs, CreatedMs: s.createdMs,
		}
	}
	return out
}

// SetStartOffset implements replica.Log; a value at or below the current start offset is
// a no-op.
func (l *PartitionLog) SetStartOffset(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if offset <= l.start {
		return nil
	}
	if offset > l.active().next {
		return fmt.Errorf("set start offset of %s to %d: %w (end offset %d)", l.dir, offset,
			ErrOutOfRange, l.active().next)
	}
	if err := l.state.Set(l.startKey(), be64(offset)); err != nil {
		return fmt.Errorf("set start offset of %s: %w", l.dir, err)
	}
	l.start = offset
	return nil
}

// ScanHeaders implements replica.Log. It collects headers in bounded chunks and calls fn
// without holding the lock, so fn may call the log.
func (l *PartitionLog) ScanHeaders(from int64, fn func(h batch.Header) error) error {
	cur := from
	for {
		hs, done, err := l.headerChunk(cur)
		if err != nil {
			return err
		}
		for i := range hs {
			if err := fn(hs[i]); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
		cur = hs[len(hs)-1].NextOffset()
	}
}

// headerChunk returns up to scanHeadersChunk headers from the batch containing cur,
// within one segment, and whether the scan has reached the end of the log.
func (l *PartitionLog) headerChunk(cur int64) ([]batch.Header, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return nil, true, err
	}
	cur = max(cur, l.start)
	if cur >= l.active().next {
		return nil, true, nil
	}
	seg := l.findSegment(cur)
	pos, rel := seg.idx.lookupOffsetEntry(uint32(cur - seg.base))
	sc := newChainScanner(seg.f, pos, seg.size, seg.base+int64(rel), seg.next)
	var hs []batch.Header
	for len(hs) < scanHeadersChunk {
		h, _, err := sc.next(false)
		if err == io.EOF {
			break
		}
		if isCorrupt(err) {
			err = l.rotFound(fmt.Errorf("%w: %w", ErrCorrupt, err))
		}
		if err != nil {
			return nil, true, fmt.Errorf("scan headers of %s: %w", l.dir, err)
		}
		if h.NextOffset() > cur {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return nil, true, fmt.Errorf("scan headers of %s: no batch at offset %d in segment %d",
			l.dir, cur, seg.base)
	}
	return hs, hs[len(hs)-1].NextOffset() >= l.active().next, nil
}

// Configure implements replica.Log.
func (l *PartitionLog) Configure(c replica.SegmentConfig) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg = normalizeConfig(c)
}
