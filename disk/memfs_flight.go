package disk

import (
	"errors"
	"path"
	"slices"
	"strings"
)

// This file holds MemFS's model of when things become durable: directory fsyncs, fsyncs
// in flight, and a crash landing inside a multi-step I/O sequence.

// ErrFrozen fails every operation on a MemFS frozen by FreezeAfter: the machine is
// crashing, and nothing from then on reaches the disk.
var ErrFrozen = errors.New("memfs: disk frozen for a crash")

// Flight is a set of fsyncs that have begun and not finished. Each covers what its file
// (or directory) held when it began: bytes written, entries created, removed or renamed
// after that wait for a later fsync. Land makes them durable; a crash before loses them
// (the bytes are still there, as unsynced bytes a crash may tear).
type Flight struct {
	m     *MemFS
	gen   uint64
	files []flightFile
	dirs  []dirSync
	done  bool
}

// flightFile is one file fsync in flight: it will make the first size bytes durable.
// A truncation below size while it is in flight lowers size (MemFS.Truncate), so the
// bytes it lands are always ones it saw.
type flightFile struct {
	node *memNode
	size int
}

// entryOp is one change to a directory's entries, durable once a directory fsync that
// began after it lands.
type entryOp struct {
	seq  uint64
	kind entryKind
	path string
	node *memNode // opSet
}

type entryKind uint8

const (
	opSet   entryKind = iota + 1 // path names node (created, replaced, renamed to)
	opDel                        // the file path is gone (removed, renamed from)
	opMkdir                      // the directory path was made
	opRmdir                      // the directory path was removed
)

// dirSync is a directory fsync: it covers the changes to dir's entries numbered up to
// upTo (those made before it began).
type dirSync struct {
	dir  string
	upTo uint64
}

// Fly runs fn and returns the fsyncs it issued (Sync, SyncDir, SyncEntry), in flight:
// none is durable until Land. Failed fsyncs fail at once, as without Fly. It models a
// driver that runs a Sync now and has it complete later (the simulator's SyncLog), and is
// meant for a single-threaded driver: any fsync issued while fn runs joins the flight.
func (m *MemFS) Fly(fn func()) *Flight {
	m.mu.Lock()
	if m.capture != nil {
		m.mu.Unlock()
		panic("memfs: Fly inside Fly")
	}
	fl := &Flight{m: m, gen: m.gen}
	m.capture = fl
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.capture = nil
		if fl.gen == m.gen && len(fl.files)+len(fl.dirs) > 0 {
			m.flights = append(m.flights, fl)
		} else {
			fl.done = true
		}
		m.mu.Unlock()
	}()
	fn()
	return fl
}

// Land completes the flight: what its fsyncs covered becomes durable. It does nothing
// after a crash (the fsyncs never completed) or a second time.
func (fl *Flight) Land() {
	m := fl.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if fl.done || fl.gen != m.gen {
		return
	}
	fl.done = true
	m.flights = slices.DeleteFunc(m.flights, func(x *Flight) bool { return x == fl })
	for _, f := range fl.files {
		f.node.syncTo(f.size)
	}
	for _, d := range fl.dirs {
		m.applyDirLocked(d)
	}
}

// Drop abandons the flight: its fsyncs never complete (the process that waited for them
// is gone; a later fsync makes the bytes durable, or a crash may tear them).
func (fl *Flight) Drop() {
	m := fl.m
	m.mu.Lock()
	defer m.mu.Unlock()
	fl.done = true
	m.flights = slices.DeleteFunc(m.flights, func(x *Flight) bool { return x == fl })
}

// cutFlightsLocked lowers what fsyncs in flight on n will land to size, after a
// truncation: the bytes past it are no longer the ones they saw.
func (m *MemFS) cutFlightsLocked(n *memNode, size int) {
	cut := func(fl *Flight) {
		for i := range fl.files {
			if fl.files[i].node == n {
				fl.files[i].size = min(fl.files[i].size, size)
			}
		}
	}
	if m.capture != nil {
		cut(m.capture)
	}
	for _, fl := range m.flights {
		cut(fl)
	}
}

// flyingLocked is how many of n's first bytes fsyncs in flight (or being issued under
// Fly) will make durable when they land.
func (m *MemFS) flyingLocked(n *memNode) int {
	size := 0
	cover := func(fl *Flight) {
		for _, f := range fl.files {
			if f.node == n {
				size = max(size, f.size)
			}
		}
	}
	if m.capture != nil {
		cover(m.capture)
	}
	for _, fl := range m.flights {
		cover(fl)
	}
	return size
}

// noteLocked records a change to the entries of p's directory.
func (m *MemFS) noteLocked(kind entryKind, p string, n *memNode) {
	m.seq++
	d := path.Dir(p)
	m.pend[d] = append(m.pend[d], entryOp{seq: m.seq, kind: kind, path: p, node: n})
}

// syncDirLocked fsyncs directory d: durable at once, or at Land inside Fly.
func (m *MemFS) syncDirLocked(d string) {
	s := dirSync{dir: d, upTo: m.seq}
	if m.capture != nil {
		m.capture.dirs = append(m.capture.dirs, s)
		return
	}
	m.applyDirLocked(s)
}

// applyDirLocked makes the changes a directory fsync covered durable, in order. Changes
// a newer fsync already made durable are gone from pend, so a late landing never undoes
// anything. A directory whose removal becomes durable takes its durable entries with it,
// and the changes to them that were still pending.
func (m *MemFS) applyDirLocked(s dirSync) {
	ops := m.pend[s.dir]
	i := 0
	for ; i < len(ops) && ops[i].seq <= s.upTo; i++ {
		op := ops[i]
		switch op.kind {
		case opSet:
			m.durFiles[op.path] = op.node
		case opDel:
			delete(m.durFiles, op.path)
		case opMkdir:
			m.durDirs[op.path] = true
		case opRmdir:
			delete(m.durDirs, op.path)
			m.purgeLocked(op.path, op.seq)
		}
	}
	if i == len(ops) {
		delete(m.pend, s.dir)
	} else if i > 0 {
		m.pend[s.dir] = ops[i:]
	}
}

// purgeLocked forgets what lay under the removed directory d: its durable entries, and
// the changes to its entries made before its removal (numbered below seq).
func (m *MemFS) purgeLocked(d string, seq uint64) {
	prefix := d + "/"
	for p := range m.durFiles {
		if strings.HasPrefix(p, prefix) {
			delete(m.durFiles, p)
		}
	}
	for p := range m.durDirs {
		if strings.HasPrefix(p, prefix) {
			delete(m.durDirs, p)
		}
	}
	for q, ops := range m.pend {
		if q == d || strings.HasPrefix(q, prefix) {
			m.pend[q] = slices.DeleteFunc(ops, func(op entryOp) bool { return op.seq < seq })
			if len(m.pend[q]) == 0 {
				delete(m.pend, q)
			}
		}
	}
}

// FreezeAfter arms a crash inside a multi-step I/O sequence: the k-th mutating operation
// from now (create, write, sync, truncate, remove, rename, mkdir; k >= 1) is the last to
// have any effect. Every operation after it fails with ErrFrozen and changes nothing,
// until Crash. k <= 0 disarms.
func (m *MemFS) FreezeAfter(k int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.trip = max(k, 0)
}

// Frozen reports whether the tripwire FreezeAfter armed has fired.
func (m *MemFS) Frozen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.frozen
}

// tickLocked counts op towards the tripwire.
func (m *MemFS) tickLocked(op Op) {
	if m.trip == 0 {
		return
	}
	switch op {
	case OpCreate, OpWrite, OpSync, OpTruncate, OpRemove, OpRename, OpMkdir:
		m.trip--
		m.frozen = m.trip == 0
	case OpOpen, OpRead, OpReadDir, OpStat:
	}
}
