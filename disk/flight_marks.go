package disk

import (
	"fmt"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// A process can die while one of its fsyncs fails: the kernel marks the pages clean
// without writing them, and nobody learns of it, so neither the truncation nor the taint
// mark of a failed fsync happens (taint.go). The restarted process would recover those
// pages from the page cache, its own fsyncs would succeed, and it would acknowledge
// batches after them; the next power loss zeroes the pages and recovery cuts the log
// there, under acknowledged batches (seed 39 of TestFailedFsyncThenRestartThenCrash with
// the session-reader draws lost offset commits so).
//
// So each Sync marks, on tmpfs (VolatileMarks), every segment it is about to fsync with
// the size known durable before it, and clears the marks once it returned. A recovery
// that finds a mark left by a dead process rewrites the segment's bytes past that size
// (rewriteDeadFlight): read from the page cache, where they are intact, truncated away
// (dropping the pages the kernel may have marked clean) and appended again, then
// fsynced. Nothing is dropped, so an acks=1 batch survives the process restart as in
// Kafka; a tail over 16 MiB is left to the taint's rewrite of the whole log.

const flightMarkTag = "fsync-in-flight/"

func (l *PartitionLog) flightPrefix() string { return l.prefix + flightMarkTag }

func (l *PartitionLog) flightMark(j syncJob) string {
	return fmt.Sprintf("%s%d/%d", l.flightPrefix(), j.seg.base, j.floor)
}

// markFlights marks the segments a Sync is about to fsync. A mark that cannot be made is
// logged; the Sync goes on (the marks narrow a rare window, they are not the data).
func (l *PartitionLog) markFlights(p syncPlan) {
	if l.volatile == nil || mutantOn("fsync-flight-unmarked") {
		return
	}
	for _, j := range p.jobs {
		if !j.needSync {
			continue
		}
		if err := l.volatile.Mark(l.flightMark(j)); err != nil {
			l.lg.Warn("cannot mark an fsync in flight on tmpfs", zap.Error(err))
		}
	}
}

// clearFlights clears a Sync's marks once its result was recorded.
func (l *PartitionLog) clearFlights(p syncPlan) {
	if l.volatile == nil {
		return
	}
	for _, j := range p.jobs {
		if j.needSync {
			_ = l.volatile.Clear(l.flightMark(j))
		}
	}
}

// undoDeadFlights rewrites, in every segment a dead process's Sync left marked, the
// bytes past the size known durable before that Sync, then clears the marks. It runs at recovery,
// before the segments are read.
func (l *PartitionLog) undoDeadFlights() error {
	if l.volatile == nil {
		return nil
	}
	names, err := l.volatile.List(l.flightPrefix())
	if err != nil {
		return err
	}
	for _, name := range names {
		base, floor, ok := parseFlightMark(strings.TrimPrefix(name, l.flightPrefix()))
		if ok {
			if err := l.rewriteDeadFlight(base, floor); err != nil {
				return err
			}
		}
		if err := l.volatile.Clear(name); err != nil {
			return err
		}
	}
	return nil
}

// maxFlightRewrite bounds the bytes rewritten in place for one dead fsync; a larger
// tail is cured by the taint's rewrite of the whole log instead.
const maxFlightRewrite = 16 << 20

// rewriteDeadFlight makes the bytes past floor that a dead process's fsync may have
// failed to write durable: it reads them (from the page cache, where they are intact),
// truncates them away (which drops the pages the kernel marked clean) and appends them
// again, then fsyncs the fresh pages. Nothing is lost: a batch acknowledged with acks=1
// survives a process restart, as in Kafka.
func (l *PartitionLog) rewriteDeadFlight(base, floor int64) error {
	name := segmentFile(l.dir, base, logSuffix)
	f, err := l.fs.OpenFile(name)
	if isNotExist(err) {
		return nil // removed since (retention, a later truncation)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	size := f.Size()
	if size <= floor {
		return nil
	}
	if size-floor > maxFlightRewrite {
		l.markTainted(fmt.Errorf("segment %d: %d bytes past the durable %d were in a "+
			"fsync when the process died", base, size-floor, floor))
		return nil
	}
	tail := make([]byte, size-floor)
	if err := readFull(f, tail, floor); err != nil {
		return err
	}
	l.lg.Warn("a process died with an fsync in flight; rewriting what it may not have "+
		"written", zap.Int64("segment", base), zap.Int64("durable_bytes", floor),
		zap.Int64("rewritten_bytes", size-floor))
	if err := f.Truncate(floor); err != nil {
		return fmt.Errorf("rewrite segment %d after an fsync that died in flight: %w", base,
			err)
	}
	if n, err := f.Write(tail); err != nil || n != len(tail) {
		return fmt.Errorf("rewrite segment %d after an fsync that died in flight: wrote %d "+
			"of %d bytes: %w", base, n, len(tail), err)
	}
	if err := f.Sync(); err != nil {
		l.markTainted(err)
		return fmt.Errorf("rewrite segment %d after an fsync that died in flight: %w", base,
			err)
	}
	return nil
}

func parseFlightMark(s string) (base, floor int64, ok bool) {
	a, b, found := strings.Cut(s, "/")
	if !found {
		return 0, 0, false
	}
	base, err1 := strconv.ParseInt(a, 10, 64)
	floor, err2 := strconv.ParseInt(b, 10, 64)
	return base, floor, err1 == nil && err2 == nil && floor >= 0
}
