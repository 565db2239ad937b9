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
	dirs  []dirSnap
	done  bool
}

// flightFile is one file fsync in flight: it will make the first size bytes durable.
// A truncation below size while it is in flight lowers size (MemFS.Truncate), so the
// bytes it lands are always ones it saw.
type flightFile struct {
	node *memNode
	size int
}

// dirSnap is a directory fsync: the directory's direct entries (full paths) when it
// began. seq orders snapshots of one directory.
type dirSnap struct {
	dir   string
	seq   uint64
	files map[string]*memNode
	dirs  []string
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

// syncDirLocked fsyncs directory d: durable at once, or at Land inside Fly.
func (m *MemFS) syncDirLocked(d string) {
	s := m.snapDirLocked(d)
	if m.capture != nil {
		m.capture.dirs = append(m.capture.dirs, s)
		return
	}
	m.applyDirLocked(s)
}

func (m *MemFS) snapDirLocked(d string) dirSnap {
	m.seq++
	s := dirSnap{dir: d, seq: m.seq, files: map[string]*memNode{}}
	for p, n := range m.files {
		if path.Dir(p) == d {
			s.files[p] = n
		}
	}
	for p := range m.dirs {
		if p != d && path.Dir(p) == d {
			s.dirs = append(s.dirs, p)
		}
	}
	return s
}

// applyDirLocked makes a snapshot of d's entries the durable ones, unless a newer one
// already is. A subdirectory whose removal becomes durable takes its durable entries
// with it.
func (m *MemFS) applyDirLocked(s dirSnap) {
	if s.seq <= m.dirSeq[s.dir] {
		return
	}
	m.dirSeq[s.dir] = s.seq
	for p := range m.durFiles {
		if path.Dir(p) == s.dir {
			delete(m.durFiles, p)
		}
	}
	var gone []string
	for p := range m.durDirs {
		if p != s.dir && path.Dir(p) == s.dir && !slices.Contains(s.dirs, p) {
			gone = append(gone, p+"/")
		}
	}
	for p, n := range s.files {
		m.durFiles[p] = n
	}
	for _, p := range s.dirs {
		m.durDirs[p] = true
	}
	if len(gone) == 0 {
		return
	}
	under := func(p string) bool {
		return slices.ContainsFunc(gone, func(g string) bool {
			return p+"/" == g || strings.HasPrefix(p, g)
		})
	}
	for p := range m.durFiles {
		if under(p) {
			delete(m.durFiles, p)
		}
	}
	for p := range m.durDirs {
		if under(p) {
			delete(m.durDirs, p)
			// Older snapshots of it, still in flight, must not bring its entries back.
			m.dirSeq[p] = s.seq
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
