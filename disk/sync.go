package disk

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
)

// syncJob is one segment a Sync must fsync, and the size the fsync will cover.
type syncJob struct {
	seg      *segment
	size     int64
	needSync bool  // false: durable already, only its index files are due
	floor    int64 // the segment's bytes known durable when the Sync was planned
	sealed   bool
	gone     bool // the segment left the log while the fsyncs ran: nothing to record
}

// syncPlan is what one Sync will do, listed under mu.
type syncPlan struct {
	jobs  []syncJob
	entry bool   // fsync the new directory's entry in its parent (SyncEntry)
	bind  bool   // write the log's topic id binding (claimLog) before any segment fsync
	dir   bool   // fsync the directory (SyncDir)
	dirAt uint64 // the dirChanges the directory fsync covers
}

// syncResult is what the fsyncs of a plan returned.
type syncResult struct {
	dirErr  error // the directory (or entry) fsync failed
	failed  int   // index of the job whose fsync failed, if err != nil
	err     error
	planErr error // the log was not usable
}

// Sync implements replica.Log. It may run on another goroutine while Append, Read,
// DeleteSegmentsBelow and Close proceed: it holds mu only to list dirty segments and to
// record the result, and no lock at all across the fsyncs, so no step of the event
// loop ever waits for a flush (docs/actors.md). Segments are fsynced oldest first, so a
// byte reported durable in one segment implies every earlier segment is durable —
// recovery relies on it. After a failed fsync the kernel may have dropped the dirty
// pages, so nothing can be claimed durable again: the log goes offline. Once a sealed
// segment is durable, Sync writes its index files, which certify it. The driver runs
// at most one Sync of a log at a time (E2, checked as D1).
func (l *PartitionLog) Sync() error {
	p, res := l.beginSync()
	if res.planErr == nil {
		res = l.runSync(p)
	}
	return l.endSync(p, res)
}

// StartSync is Sync in two halves, for a driver that models the time an fsync takes
// (the simulator, on a MemFS whose Fly leaves fsyncs in flight): it lists the work and
// issues the fsyncs now, and returns the function that finishes the Sync once they
// completed — records what they made durable, writes index files, returns Sync's
// result. The caller runs no other Sync of this log in between.
func (l *PartitionLog) StartSync() (finish func() error) {
	p, res := l.beginSync()
	if res.planErr == nil {
		res = l.runSync(p)
	}
	return func() error { return l.endSync(p, res) }
}

func (l *PartitionLog) beginSync() (syncPlan, syncResult) {
	l.mu.Lock()
	core.Invariant(!l.syncing, "D1", "two Syncs of %s at once", l.dir)
	l.syncing = true
	l.mu.Unlock()
	return l.planSync()
}

// endSync finishes a Sync: fileMu keeps its index writes apart from a segment removal.
func (l *PartitionLog) endSync(p syncPlan, res syncResult) error {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	err := l.finishSync(p, res)
	l.clearFlights(p)
	l.mu.Lock()
	l.syncing = false
	l.mu.Unlock()
	return err
}

func (l *PartitionLog) planSync() (syncPlan, syncResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return syncPlan{}, syncResult{planErr: err}
	}
	var p syncPlan
	for _, s := range l.segs {
		if s.synced < s.size || (s.sealed && s.indexedSize < s.size && !s.indexFailed) {
			p.jobs = append(p.jobs, syncJob{seg: s, size: s.size, needSync: s.synced < s.size,
				sealed: s.sealed, floor: s.synced})
			s.truncFloor = s.size
		}
	}
	// Only once there are bytes to make durable: an empty new log lost by a crash is made
	// again, empty, by the next open (a replica's first Sync, at open, stays free).
	if hasSync(p.jobs) {
		p.entry = l.entryPending
		p.bind = l.bindPending
		p.dir = !p.entry && l.dirChanges != l.dirSynced && !mutantOn("roll-no-dir-sync")
		p.dirAt = l.dirChanges
	}
	return p, syncResult{}
}

// runSync issues the plan's fsyncs: the directory's first, then segments oldest first.
// The segments are marked in flight first (flight_marks.go).
func (l *PartitionLog) runSync(p syncPlan) syncResult {
	l.markFlights(p)
	switch {
	case p.entry:
		if err := l.fs.SyncEntry(l.dir); err != nil {
			return syncResult{dirErr: fmt.Errorf("fsync the directory entry of %s: %w",
				l.dir, err)}
		}
	case p.dir:
		if err := l.fs.SyncDir(l.dir); err != nil {
			return syncResult{dirErr: fmt.Errorf("fsync directory %s: %w", l.dir, err)}
		}
	}
	if p.bind {
		if err := l.state.Set(topicIDKey(l.prefix), l.cfg.TopicID[:]); err != nil {
			return syncResult{dirErr: fmt.Errorf("bind %s to its topic id: %w", l.dir, err)}
		}
	}
	for i, j := range p.jobs {
		if !j.needSync {
			continue
		}
		if err := j.seg.f.Sync(); err != nil {
			if errors.Is(err, fs.ErrClosed) && l.gone(j.seg) {
				// Removed (DeleteSegmentsBelow) or closed (Close) while this Sync ran:
				// its fsync never ran, and nothing of it is claimed durable.
				p.jobs[i].needSync, p.jobs[i].gone = false, true
				continue
			}
			return syncResult{failed: i, err: err}
		}
	}
	return syncResult{}
}

// gone says whether seg left the log (a removal or Close) since a Sync listed it.
func (l *PartitionLog) gone(seg *segment) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed || !slices.Contains(l.segs, seg)
}

// finishSync records what the fsyncs made durable, or takes the log offline after a
// failed one, then writes the index files of the sealed segments made durable. A
// directory fsync that fails is handled as a failed segment fsync: nothing written
// since can be claimed durable, so the log goes offline and drops it.
func (l *PartitionLog) finishSync(p syncPlan, res syncResult) error {
	if res.planErr != nil {
		return res.planErr
	}
	l.mu.Lock()
	if res.dirErr != nil || res.err != nil {
		defer l.mu.Unlock()
		if l.closed {
			// Closed while the fsyncs were in flight (StartSync): dropping is no longer
			// possible, so the next recovery rewrites the log.
			l.markTainted(errors.Join(res.dirErr, res.err))
			return errors.Join(res.dirErr, res.err)
		}
		if res.dirErr != nil {
			failed := l.goOffline(res.dirErr)
			l.dropUnsynced()
			return failed
		}
		// The segments fsynced before this one are durable: dropUnsynced must keep
		// what they made durable, not cut them back to the last Sync's sizes.
		for _, done := range p.jobs[:res.failed] {
			done.seg.synced = max(done.seg.synced, min(done.size, done.seg.truncFloor))
		}
		j := p.jobs[res.failed]
		failed := l.goOffline(fmt.Errorf("fsync segment %d: %w", j.seg.base, res.err))
		l.dropUnsynced()
		return failed
	}
	if l.failed != nil {
		// The log went offline while the fsyncs were in flight: a write that found an
		// eviction's fsync failed (or a failed Sync) dropped every byte not durable
		// before, which cuts what these fsyncs cover, so they made nothing new durable
		// whatever they returned. Reporting success would let the replica acknowledge
		// the dropped batches (seed 1686: an OffsetCommit answered, then lost).
		l.mu.Unlock()
		return l.failed
	}
	if p.entry {
		l.entryPending = false
	}
	if p.bind {
		l.bindPending = false
	}
	if p.entry || p.dir {
		l.dirSynced = max(l.dirSynced, p.dirAt)
	}
	var certify []syncJob
	for _, j := range p.jobs {
		if j.gone {
			continue
		}
		if j.seg.truncFloor < j.size {
			// Cut by TruncateTo while the fsyncs ran: what was appended since in place
			// of the cut bytes waits for the next Sync, and is no longer sealed.
			j.size, j.sealed = j.seg.truncFloor, false
		}
		j.seg.synced = max(j.seg.synced, j.size)
		if j.sealed && !l.closed && slices.Contains(l.segs, j.seg) {
			certify = append(certify, j)
		}
	}
	l.mu.Unlock()
	for _, j := range certify {
		l.writeIndexes(j.seg, j.size)
	}
	return nil
}

func hasSync(jobs []syncJob) bool {
	for _, j := range jobs {
		if j.needSync {
			return true
		}
	}
	return false
}

// dropUnsynced truncates every segment back to the bytes known durable, after a failed
// fsync. The kernel may have marked the unwritten pages clean ("fsyncgate"): they stay
// readable from the page cache, so a process restart would recover them, serve them,
// and — since no fsync will ever write them — lose them, and every later byte of the
// file, in the next power loss. Truncating evicts them. If a truncation fails too, the
// log marks itself tainted and the next recovery rewrites it (taint.go).
// Called with mu held, after goOffline, so no Append or Read races with it.
func (l *PartitionLog) dropUnsynced() {
	for _, s := range l.segs {
		if s.synced >= s.size {
			continue
		}
		if err := s.f.Truncate(s.synced); err != nil {
			l.markTainted(fmt.Errorf("truncate segment %d to its %d durable bytes: %w",
				s.base, s.synced, err))
		}
	}
	// The in-memory view (sizes, end offset, indexes) is left as it was: the log is
	// offline, and only reopening it, which runs recovery, makes it usable again.
}

// writeIndexes writes the index files certifying the first size bytes of seg, which
// must be durable already and must not change (sealed, or being closed). The files are
// not fsynced: a torn or lost index fails its CRC and recovery validates the segment
// instead. A failure is logged, not returned: indexes only speed up recovery.
func (l *PartitionLog) writeIndexes(seg *segment, size int64) {
	l.mu.Lock()
	// A segment that grew since size was taken is not what the caller meant to certify.
	done := seg.indexedSize >= size || seg.indexFailed || seg.size != size
	h := indexHeader{base: seg.base, size: size, next: seg.next,
		maxTs: seg.idx.maxTs, maxTsOff: seg.idx.maxTsOff}
	offs, times := seg.idx.offs, seg.idx.times
	l.mu.Unlock()
	if done {
		return
	}
	err := l.writeFile(segmentFile(l.dir, seg.base, indexSuffix), encodeOffsetIndex(h, offs))
	if err == nil {
		err = l.writeFile(segmentFile(l.dir, seg.base, timeIndexSuffix), encodeTimeIndex(h, times))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		seg.indexFailed = true
		l.lg.Warn("cannot write segment index; recovery will rebuild it",
			zap.Int64("segment", seg.base), zap.Error(err))
		return
	}
	seg.indexedSize = size
}

func (l *PartitionLog) writeFile(path string, data []byte) error {
	f, err := l.fs.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close implements replica.Log. It does not sync; it does write the index files of every
// segment that is wholly durable, so the next open need not scan them. It does not wait
// for a Sync in flight: that Sync's fsyncs of closed handles are dropped, and its
// finish records nothing (an fsync that failed marks the log tainted, see finishSync).
func (l *PartitionLog) Close() error {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	var certify []*segment
	if l.failed == nil {
		for _, s := range l.segs {
			if s.size > 0 && s.synced == s.size && s.indexedSize < s.size {
				certify = append(certify, s)
			}
		}
	}
	l.mu.Unlock()
	for _, s := range certify {
		l.writeIndexes(s, s.size)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return l.closeFiles()
}

func (l *PartitionLog) closeFiles() error {
	var first error
	for _, s := range l.segs {
		err := s.f.Close()
		if errors.Is(err, errEvictSync) {
			// An fsync the handle cache ran failed, and the log may not have dropped
			// what it lost (it went offline for another reason, or never synced again):
			// the next recovery rewrites the log.
			l.markTainted(err)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// DeleteSegmentsBelow implements replica.Log. Files are removed oldest first, indexes
// before the log, then the directory is fsynced once, so the removals are durable on
// return (a crash before may undo some or all of them; the start offset then goes back,
// no record is lost). If that fsync fails the log goes offline, as after a failed
// Sync: what is durable is unknown until recovery. It does not wait for a Sync in
// flight: that Sync's fsync of a removed segment is dropped (runSync).
func (l *PartitionLog) DeleteSegmentsBelow(offset int64) error {
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	n := 0
	for n < len(l.segs)-1 && l.segs[n].next <= offset {
		n++
	}
	for i := 0; i < n; i++ {
		if err := l.removeSegment(l.segs[i]); err != nil {
			l.dropFirst(i)
			return fmt.Errorf("delete segment %d of %s: %w", l.segs[0].base, l.dir, err)
		}
	}
	l.dropFirst(n)
	if n == 0 {
		return nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		failed := l.goOffline(fmt.Errorf("fsync directory %s after deleting segments: %w",
			l.dir, err))
		l.dropUnsynced()
		return failed
	}
	l.dirSynced = l.dirChanges
	return nil
}

// dropFirst forgets the n oldest segments and raises the start offset past them.
func (l *PartitionLog) dropFirst(n int) {
	if n == 0 {
		return
	}
	l.segs = append([]*segment(nil), l.segs[n:]...)
	l.start = max(l.start, l.segs[0].base)
}

// removeSegment deletes a segment's files and state; the handle is closed last so a
// failed removal leaves the segment usable.
func (l *PartitionLog) removeSegment(s *segment) error {
	l.dirChanges++
	if err := removeSegmentFiles(l.fs, l.dir, s.base); err != nil {
		return err
	}
	_ = s.f.Close()
	return l.state.Delete(l.createdKey(s.base))
}

func removeSegmentFiles(fsys FS, dir string, base int64) error {
	for _, suffix := range []string{indexSuffix, timeIndexSuffix, logSuffix} {
		err := fsys.Remove(segmentFile(dir, base, suffix))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// removingKey marks a partition whose removal has begun and not finished. While it is
// set, OpenPartitionLog finishes the removal before anything else: what is left of a
// deleted topic's log (after a crash or a failed read of the directory part way) is
// never recovered as the log of a topic created later under the same name.
func removingKey(prefix string) []byte { return []byte(prefix + "removing") }

// topicIDKey holds the id of the topic a log belongs to.
func topicIDKey(prefix string) []byte { return []byte(prefix + "topic-id") }

// claimLog binds the log under prefix to topic id (zero: unknown, nothing to do). A
// log bound to another id belongs to a deleted topic of the same name whose removal
// failed (a failed state store, say): it is removed first, so a re-created topic
// starts empty. A log with no id (written before ids were recorded) is kept.
func claimLog(fsys FS, dir string, state StateStore, prefix string, id [16]byte,
	lg *zap.Logger) (bindPending bool, err error) {
	if id == ([16]byte{}) {
		return false, nil
	}
	v, ok, err := state.Get(topicIDKey(prefix))
	switch {
	case err != nil:
		return false, err
	case ok && bytes.Equal(v, id[:]):
		return false, nil
	case ok:
		lg.Warn("removing the log of an earlier topic of the same name",
			zap.String("log", dir), zap.Binary("old_topic_id", v))
		if err := RemovePartitionLog(fsys, dir, state, prefix); err != nil {
			return false, fmt.Errorf("remove the earlier topic's log: %w", err)
		}
	}
	// The binding is written by the first Sync with bytes to make durable, off the event
	// loop, before those bytes: a synced store write per new log here made creating
	// 5,000 partitions take a minute. A log with nothing durable has nothing to leak to
	// a later topic of the same name.
	return true, nil
}

// RemovePartitionLog deletes a partition's directory and every state key under prefix,
// for a deleted topic. The log must be closed. The removing mark goes first and last,
// the files in between, so a removal that stops part way is finished by the next
// removal or open. The directory and its parent are fsynced before any state key goes:
// a crash that undid the removal after the mark was gone would bring the deleted
// topic's data back as the log of a topic created later under the same name.
func RemovePartitionLog(fsys FS, dir string, state StateStore, prefix string) error {
	if err := state.Set(removingKey(prefix), []byte{1}); err != nil {
		return fmt.Errorf("remove partition log %s: %w", dir, err)
	}
	names, err := fsys.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove partition log %s: %w", dir, err)
	}
	// Segment logs first, oldest first, then everything else.
	for _, name := range names {
		if _, suffix, ok := parseSegmentName(name); ok && suffix == logSuffix {
			if err := fsys.Remove(dir + "/" + name); err != nil {
				return fmt.Errorf("remove partition log %s: %w", dir, err)
			}
		}
	}
	for _, name := range names {
		if _, suffix, ok := parseSegmentName(name); ok && suffix == logSuffix {
			continue
		}
		if err := fsys.Remove(dir + "/" + name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove partition log %s: %w", dir, err)
		}
	}
	if err == nil {
		if err := fsys.SyncDir(dir); err != nil {
			return fmt.Errorf("remove partition log %s: %w", dir, err)
		}
		if err := fsys.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove partition log %s: %w", dir, err)
		}
	}
	// Also when the directory was gone already: an earlier removal may have stopped
	// before this fsync.
	if err := fsys.SyncDir(path.Dir(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove partition log %s: %w", dir, err)
	}
	var keys [][]byte
	if err := state.Scan([]byte(prefix), func(k, _ []byte) error {
		keys = append(keys, append([]byte(nil), k...))
		return nil
	}); err != nil {
		return fmt.Errorf("remove state of %s: %w", dir, err)
	}
	mark := removingKey(prefix)
	for _, k := range keys {
		if string(k) == string(mark) {
			continue // last, once everything else is gone
		}
		if err := state.Delete(k); err != nil {
			return fmt.Errorf("remove state of %s: %w", dir, err)
		}
	}
	if err := state.Delete(mark); err != nil {
		return fmt.Errorf("remove state of %s: %w", dir, err)
	}
	return nil
}
