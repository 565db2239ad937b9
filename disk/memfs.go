package disk

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"path"
	"sort"
	"sync"
	"syscall"
)

// CrashRand is the randomness MemFS.Crash draws from; *math/rand.Rand satisfies it. The
// caller seeds it, so a crash is reproducible from its seed.
type CrashRand interface {
	Intn(n int) int
	Int63() int64
}

// errStale is returned by a handle opened before the last Crash: the process that held
// it is gone, and nothing it does may reach the new disk state.
var errStale = errors.New("memfs: file handle predates a crash")

// maxGarbleBytes bounds how many trailing bytes of a torn write Crash may garble.
const maxGarbleBytes = 8

// MemFS is an in-memory filesystem that can crash, as hostile as a real disk about when
// things become durable. Each file has a durable content (what the last successful Sync
// covered) and a current content. Crash rebuilds every file from its durable content
// plus a random-length prefix of the bytes appended since (a torn write), whose last few
// bytes may be garbled. A truncation that was not followed by a Sync is undone by a
// crash.
//
// The namespace has a durable copy too. Creating, removing and renaming a file, and
// Mkdir, change only the current one; an fsync of the directory (SyncDir, SyncEntry,
// and MkdirAll for each ancestor, as OSFS does) makes that directory's entries durable
// as they are. Crash rebuilds the namespace from the durable copy: an unsynced creation
// is lost, an unsynced removal or rename undone (the file comes back with its durable
// content), and a directory whose own entry is not durable is lost with everything in
// it.
//
// Fly leaves the fsyncs a function issues in flight: each covers only what was written
// (or entered in the directory) before it began, and becomes durable when the Flight
// lands. FreezeAfter arms a crash inside a multi-step I/O sequence: after the k-th
// mutating operation the disk freezes and every later one fails with no effect.
//
// A Sync failed by the fault function behaves as Linux does after a writeback error
// ("fsyncgate"): the dirty bytes stay readable, but the kernel has marked them clean, so
// no later Sync writes them; a crash turns them into zeros, even if a later Sync
// succeeded and covered bytes after them. Only truncating them away ends the hazard.
//
// MemFS is safe for concurrent use (Fly and FreezeAfter are for single-threaded
// drivers) and deterministic: nothing observable depends on map order, and its only
// randomness is the CrashRand passed to Crash.
type MemFS struct {
	mu    sync.Mutex
	dirs  map[string]bool
	files map[string]*memNode
	// durDirs and durFiles are the durable namespace: what a crash leaves.
	durDirs  map[string]bool
	durFiles map[string]*memNode
	// pend are, per directory, the changes to its entries no directory fsync has made
	// durable yet, in order; seq numbers them.
	pend  map[string][]entryOp
	seq   uint64
	gen   uint64 // bumped by Crash; handles from older generations are stale
	fault func(op Op, path string) error

	capture *Flight   // the flight Fly is filling, if any
	flights []*Flight // flights begun and not landed
	trip    int       // mutating operations until the disk freezes; 0: not armed
	frozen  bool
}

type memNode struct {
	data []byte
	// data[:durLen] is the durable content, unless diverged: then a truncation cut into
	// the durable bytes since the last sync and durCopy holds them.
	durLen   int
	diverged bool
	durCopy  []byte
	// truncLow is the lowest size a truncation cut the file to since it diverged: the
	// bytes rewritten from there on are as dirty as the ones past durLen.
	truncLow int
	// lost are byte ranges of data whose writeback failed: readable now, zeros after a
	// crash. durLost are those of durCopy.
	lost, durLost []span
}

// span is the byte range [from, to) of a file.
type span struct{ from, to int }

// addSpan adds [from, to) to spans, merging it with the last span when they touch (a
// failed sync repeated without progress covers the same bytes again).
func addSpan(spans []span, from, to int) []span {
	if from >= to {
		return spans
	}
	if n := len(spans); n > 0 && from <= spans[n-1].to {
		spans[n-1].from = min(spans[n-1].from, from)
		spans[n-1].to = max(spans[n-1].to, to)
		return spans
	}
	return append(spans, span{from, to})
}

// clipSpans returns the parts of spans below size.
func clipSpans(spans []span, size int) []span {
	var out []span
	for _, sp := range spans {
		if sp.from < size {
			out = append(out, span{sp.from, min(sp.to, size)})
		}
	}
	return out
}

// zeroSpans zeroes the bytes of d that spans cover.
func zeroSpans(d []byte, spans []span) {
	for _, sp := range spans {
		for i := sp.from; i < min(sp.to, len(d)); i++ {
			d[i] = 0
		}
	}
}

var _ FS = (*MemFS)(nil)

// NewMemFS returns an empty filesystem whose root ("/" and ".") exists.
func NewMemFS() *MemFS {
	return &MemFS{dirs: map[string]bool{}, files: map[string]*memNode{},
		durDirs: map[string]bool{}, durFiles: map[string]*memNode{},
		pend: map[string][]entryOp{}}
}

// SetFault installs a function consulted before every operation; a non-nil error fails
// the operation. A failed Write still appends the first half of its bytes (a short write,
// as on ENOSPC), a failed Sync makes nothing durable, any other failed operation changes
// nothing. nil removes the fault function. The function is called without MemFS's lock
// held and may be called from several goroutines.
func (m *MemFS) SetFault(f func(op Op, path string) error) {
	m.mu.Lock()
	m.fault = f
	m.mu.Unlock()
}

func (m *MemFS) check(op Op, p string) error {
	m.mu.Lock()
	if m.frozen {
		m.mu.Unlock()
		return ErrFrozen
	}
	m.tickLocked(op)
	f := m.fault
	m.mu.Unlock()
	if f == nil {
		return nil
	}
	return f(op, p)
}

func (m *MemFS) dirExists(p string) bool {
	return p == "." || p == "/" || m.dirs[p]
}

func pathErr(op, p string, err error) error { return &fs.PathError{Op: op, Path: p, Err: err} }

// Create implements FS.
func (m *MemFS) Create(p string) (File, error) {
	p = path.Clean(p)
	if err := m.check(OpCreate, p); err != nil {
		return nil, pathErr("create", p, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirExists(path.Dir(p)) {
		return nil, pathErr("create", p, fs.ErrNotExist)
	}
	if m.dirs[p] {
		return nil, pathErr("create", p, syscall.EISDIR)
	}
	n := &memNode{}
	m.files[p] = n
	m.noteLocked(opSet, p, n)
	return &memFile{fs: m, node: n, path: p, gen: m.gen}, nil
}

// OpenFile implements FS.
func (m *MemFS) OpenFile(p string) (File, error) { return m.open(p, false) }

// Open implements FS.
func (m *MemFS) Open(p string) (File, error) { return m.open(p, true) }

func (m *MemFS) open(p string, readOnly bool) (File, error) {
	p = path.Clean(p)
	if err := m.check(OpOpen, p); err != nil {
		return nil, pathErr("open", p, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[p]
	if !ok {
		return nil, pathErr("open", p, fs.ErrNotExist)
	}
	return &memFile{fs: m, node: n, path: p, gen: m.gen, readOnly: readOnly}, nil
}

// Remove implements FS.
func (m *MemFS) Remove(p string) error {
	p = path.Clean(p)
	if err := m.check(OpRemove, p); err != nil {
		return pathErr("remove", p, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[p]; ok {
		delete(m.files, p)
		m.noteLocked(opDel, p, nil)
		return nil
	}
	if !m.dirs[p] {
		return pathErr("remove", p, fs.ErrNotExist)
	}
	if len(m.childrenLocked(p)) > 0 {
		return pathErr("remove", p, syscall.ENOTEMPTY)
	}
	delete(m.dirs, p)
	m.noteLocked(opRmdir, p, nil)
	return nil
}

// Rename implements FS (files only).
func (m *MemFS) Rename(oldpath, newpath string) error {
	oldpath, newpath = path.Clean(oldpath), path.Clean(newpath)
	if err := m.check(OpRename, oldpath); err != nil {
		return pathErr("rename", oldpath, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[oldpath]
	if !ok {
		return pathErr("rename", oldpath, fs.ErrNotExist)
	}
	if !m.dirExists(path.Dir(newpath)) {
		return pathErr("rename", newpath, fs.ErrNotExist)
	}
	if m.dirs[newpath] {
		return pathErr("rename", newpath, syscall.EISDIR)
	}
	delete(m.files, oldpath)
	m.files[newpath] = n
	m.noteLocked(opDel, oldpath, nil)
	m.noteLocked(opSet, newpath, n)
	return nil
}

// MkdirAll implements FS.
func (m *MemFS) MkdirAll(p string) error {
	p = path.Clean(p)
	if err := m.check(OpMkdir, p); err != nil {
		return pathErr("mkdir", p, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for q := p; !m.dirExists(q); q = path.Dir(q) {
		if _, ok := m.files[q]; ok {
			return pathErr("mkdir", q, syscall.ENOTDIR)
		}
		m.dirs[q] = true
		m.noteLocked(opMkdir, q, nil)
	}
	for q := p; q != "." && q != "/"; q = path.Dir(q) {
		m.syncDirLocked(path.Dir(q)) // OSFS fsyncs every ancestor, existing or not
	}
	return nil
}

// Mkdir implements FS: the directory is lost by a crash until its parent is synced.
func (m *MemFS) Mkdir(p string) error {
	p = path.Clean(p)
	if err := m.check(OpMkdir, p); err != nil {
		return pathErr("mkdir", p, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[p]; ok || m.dirExists(p) {
		return pathErr("mkdir", p, fs.ErrExist)
	}
	if !m.dirExists(path.Dir(p)) {
		return pathErr("mkdir", p, fs.ErrNotExist)
	}
	m.dirs[p] = true
	m.noteLocked(opMkdir, p, nil)
	return nil
}

// SyncEntry implements FS: the directory's entries, then its own entry in its parent. A
// fault on it is an OpSync of the entry's path.
func (m *MemFS) SyncEntry(p string) error {
	p = path.Clean(p)
	if err := m.check(OpSync, p); err != nil {
		return pathErr("sync", path.Dir(p), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirExists(p) {
		if _, ok := m.files[p]; !ok {
			return pathErr("sync", p, fs.ErrNotExist)
		}
	} else {
		m.syncDirLocked(p)
	}
	if p != "." && p != "/" {
		m.syncDirLocked(path.Dir(p))
	}
	return nil
}

// SyncDir implements FS: the creations, removals and renames of the directory's entries
// made so far become durable. A fault on it is an OpSync of the directory.
func (m *MemFS) SyncDir(p string) error {
	p = path.Clean(p)
	if err := m.check(OpSync, p); err != nil {
		return pathErr("sync", p, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirExists(p) {
		return pathErr("sync", p, fs.ErrNotExist)
	}
	m.syncDirLocked(p)
	return nil
}

// ReadDir implements FS.
func (m *MemFS) ReadDir(p string) ([]string, error) {
	p = path.Clean(p)
	if err := m.check(OpReadDir, p); err != nil {
		return nil, pathErr("readdir", p, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirExists(p) {
		return nil, pathErr("readdir", p, fs.ErrNotExist)
	}
	return m.childrenLocked(p), nil
}

// childrenLocked lists the sorted names of p's direct children.
func (m *MemFS) childrenLocked(p string) []string {
	var names []string
	for f := range m.files {
		if path.Dir(f) == p {
			names = append(names, path.Base(f))
		}
	}
	for d := range m.dirs {
		if d != p && path.Dir(d) == p {
			names = append(names, path.Base(d))
		}
	}
	sort.Strings(names)
	return names
}

// Stat implements FS.
func (m *MemFS) Stat(p string) (int64, error) {
	p = path.Clean(p)
	if err := m.check(OpStat, p); err != nil {
		return 0, pathErr("stat", p, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[p]
	if !ok {
		if m.dirExists(p) {
			return 0, nil
		}
		return 0, pathErr("stat", p, fs.ErrNotExist)
	}
	return int64(len(n.data)), nil
}

// ReadFile returns a copy of a file's current content (tests and tools).
func (m *MemFS) ReadFile(p string) ([]byte, error) {
	p = path.Clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[p]
	if !ok {
		return nil, pathErr("read", p, fs.ErrNotExist)
	}
	return append([]byte(nil), n.data...), nil
}

// WriteFile creates or replaces a file with durable content and syncs its directory
// (tests and tools); the parent directory must exist.
func (m *MemFS) WriteFile(p string, data []byte) error {
	p = path.Clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirExists(path.Dir(p)) {
		return pathErr("write", p, fs.ErrNotExist)
	}
	n := &memNode{data: append([]byte(nil), data...), durLen: len(data)}
	m.files[p] = n
	m.noteLocked(opSet, p, n)
	m.applyDirLocked(dirSync{dir: path.Dir(p), upTo: m.seq})
	return nil
}

// Crash simulates a power loss: the namespace falls back to its durable copy, every
// file in it to its durable content plus a random prefix of what was appended after the
// last sync, whose last bytes may be garbled; a truncation not yet synced is undone.
// Flights not landed are lost, a freeze ends. Handles opened before the crash fail from
// then on. Files are visited in path order so the outcome depends only on r.
func (m *MemFS) Crash(r CrashRand) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dirs := map[string]bool{}
	for d := range m.durDirs {
		if m.durableReachLocked(d) {
			dirs[d] = true
		}
	}
	paths := make([]string, 0, len(m.durFiles))
	for p := range m.durFiles {
		if d := path.Dir(p); d == "." || d == "/" || dirs[d] {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	files := make(map[string]*memNode, len(paths))
	crashed := map[*memNode]*memNode{} // a node under two durable names crashes once
	for _, p := range paths {
		n := m.durFiles[p]
		c, ok := crashed[n]
		if !ok {
			c = n.crash(r)
			crashed[n] = c
		}
		files[p] = c
	}
	m.files, m.dirs = files, dirs
	m.durFiles, m.durDirs = maps.Clone(files), maps.Clone(dirs)
	m.capture, m.flights, m.trip, m.frozen = nil, nil, 0, false
	clear(m.pend)
	m.gen++
}

// durableReachLocked reports whether d and every ancestor have durable entries.
func (m *MemFS) durableReachLocked(d string) bool {
	for ; d != "." && d != "/"; d = path.Dir(d) {
		if !m.durDirs[d] {
			return false
		}
	}
	return true
}

func (n *memNode) crash(r CrashRand) *memNode {
	if n.diverged {
		d := append([]byte(nil), n.durCopy...)
		zeroSpans(d, n.durLost)
		return &memNode{data: d, durLen: len(d)}
	}
	extra := len(n.data) - n.durLen
	keep := r.Intn(extra + 1)
	d := append([]byte(nil), n.data[:n.durLen+keep]...)
	if keep > 0 && r.Intn(2) == 0 {
		g := 1 + r.Intn(min(keep, maxGarbleBytes))
		for i := len(d) - g; i < len(d); i++ {
			d[i] ^= byte(1 + r.Intn(255))
		}
	}
	zeroSpans(d, n.lost)
	return &memNode{data: d, durLen: len(d)}
}

// memFile is a handle on a memNode.
type memFile struct {
	fs       *MemFS
	node     *memNode
	path     string
	gen      uint64
	readOnly bool
	closed   bool
}

// usableLocked reports why the handle cannot be used, if it cannot.
func (f *memFile) usableLocked(write bool) error {
	switch {
	case f.closed:
		return fs.ErrClosed
	case f.gen != f.fs.gen:
		return errStale
	case write && f.readOnly:
		return fs.ErrPermission
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.check(OpRead, f.path); err != nil {
		return 0, pathErr("read", f.path, err)
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usableLocked(false); err != nil {
		return 0, pathErr("read", f.path, err)
	}
	if off < 0 {
		return 0, pathErr("read", f.path, fs.ErrInvalid)
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	ferr := f.fs.check(OpWrite, f.path)
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usableLocked(true); err != nil {
		return 0, pathErr("write", f.path, err)
	}
	if errors.Is(ferr, ErrFrozen) {
		return 0, pathErr("write", f.path, ferr)
	}
	if ferr != nil {
		half := p[:len(p)/2]
		f.node.appendBytes(half)
		return len(half), pathErr("write", f.path, ferr)
	}
	f.node.appendBytes(p)
	return len(p), nil
}

// appendBytes grows by doubling: append's gentler growth for large slices makes a
// simulated disk copy each segment several times over.
func (n *memNode) appendBytes(p []byte) {
	if need := len(n.data) + len(p); need > cap(n.data) {
		grown := make([]byte, len(n.data), max(need, 2*cap(n.data), 4096))
		copy(grown, n.data)
		n.data = grown
	}
	n.data = append(n.data, p...)
}

func (f *memFile) Sync() error {
	ferr := f.fs.check(OpSync, f.path)
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usableLocked(true); err != nil {
		return pathErr("sync", f.path, err)
	}
	n := f.node
	if errors.Is(ferr, ErrFrozen) {
		return pathErr("sync", f.path, ferr)
	}
	if ferr != nil {
		// Writeback failed and the pages were marked clean anyway: every byte written
		// since the last successful sync.
		from := n.durLen
		if n.diverged {
			from = n.truncLow
		}
		// Bytes an fsync still in flight covers are that fsync's writeback, which has
		// begun and which this failure does not touch: it lands them (seed 4599: the
		// handle cache's eviction fsync failed while the log's own fsync of the same
		// file was in flight, and the bytes that one was acknowledged for were lost).
		from = max(from, f.fs.flyingLocked(n))
		n.lost = addSpan(n.lost, from, len(n.data))
		return pathErr("sync", f.path, ferr)
	}
	if c := f.fs.capture; c != nil {
		c.files = append(c.files, flightFile{node: n, size: len(n.data)})
		return nil
	}
	n.syncTo(len(n.data))
	return nil
}

// syncTo makes the first size bytes durable: an fsync that covered them landed. It
// also covers a truncation made before it (size is never below one made after it began,
// see MemFS.Truncate), so the durable copy a truncation kept is no longer needed.
func (n *memNode) syncTo(size int) {
	size = min(size, len(n.data))
	if n.diverged {
		n.durLen, n.diverged, n.durCopy, n.durLost = size, false, nil, nil
		return
	}
	n.durLen = max(n.durLen, size)
}

func (f *memFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.path); err != nil {
		return pathErr("truncate", f.path, err)
	}
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.usableLocked(true); err != nil {
		return pathErr("truncate", f.path, err)
	}
	n := f.node
	if size < 0 {
		return pathErr("truncate", f.path, fs.ErrInvalid)
	}
	if size > int64(len(n.data)) {
		n.data = append(n.data, make([]byte, size-int64(len(n.data)))...)
		return nil
	}
	if int(size) < n.durLen && !n.diverged {
		// The durable bytes must survive a crash that undoes this truncation, and the
		// appends that follow would overwrite them in place: keep a copy.
		n.durCopy = append([]byte(nil), n.data[:n.durLen]...)
		n.durLost = clipSpans(n.lost, n.durLen)
		n.diverged, n.truncLow = true, int(size)
	}
	if n.diverged {
		n.truncLow = min(n.truncLow, int(size))
	}
	n.lost = clipSpans(n.lost, int(size))
	f.fs.cutFlightsLocked(n, int(size))
	// Cut capacity too, so later appends never write into bytes a reader still holds.
	n.data = n.data[:size:size]
	return nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.path, fs.ErrClosed)
	}
	f.closed = true
	return nil
}

func (f *memFile) Size() int64 {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return int64(len(f.node.data))
}
