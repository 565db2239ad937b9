package disk

import (
	"container/list"
	"errors"
	"fmt"
	"io/fs"
	"sync"
)

// FileCache is an FS that bounds how many of the files opened through Create and
// OpenFile hold a descriptor at once: a least-recently-used handle is closed when a
// new one would pass the limit, and reopened (OpenFile) when it is next used. Open,
// for short reads of small files, and every other method pass through uncounted.
//
// A node keeps every partition's segment files behind one FileCache, so the
// descriptors its logs use are bounded however many partitions and segments it holds
// (Kafka needs no such bound because it maps its files into memory).
//
// Durability is unchanged: a handle closed by eviction is fsynced first when it was
// written or truncated since its last successful Sync, so a later Sync of the closed
// handle has nothing left to do and returns nil without reopening it. If that fsync
// fails, the failure is kept: every later Sync, Write and Close of the handle returns it
// (Truncate and ReadAt still work, so the log can drop the bytes the failed fsync may
// have lost, see dropUnsynced). A Write on an evicted handle reopens it.
//
// Handles must not be renamed while open: a reopen uses the name the handle was opened
// with. Cost: a use of an open handle takes the cache's mutex twice and no system call.
// An eviction, which may fsync, runs on the goroutine whose open caused it, without the
// mutex held. Handles in use (pinned for the length of one call) are never evicted, so
// the bound can be passed by at most the number of calls in progress.
type FileCache struct {
	fs    FS
	limit int

	mu      sync.Mutex
	lru     list.List // open, unpinned or pinned handles; most recently used at the front
	open    int       // descriptors held: open handles plus those being closed
	closing int       // handles being closed by an eviction
	stats   FileCacheStats
}

// errEvictSync marks the error of an eviction whose fsync failed. The bytes it did not
// write may be gone from the page cache (fsyncgate): the log must drop them as after a
// failed Sync, or, if it learns of it only when closing, mark itself tainted.
var errEvictSync = errors.New("fsync before closing an evicted file failed")

// FileCacheStats counts a FileCache's work since it was made.
type FileCacheStats struct {
	Open      int // descriptors held now
	Peak      int // most descriptors held at once
	Reopens   int // evicted handles opened again
	Evictions int // handles closed to stay within the limit
	EvictSync int // evictions that fsynced first
}

var _ FS = (*FileCache)(nil)

// NewFileCache returns a cache over fsys holding at most limit descriptors (at least 1).
func NewFileCache(fsys FS, limit int) *FileCache {
	return &FileCache{fs: fsys, limit: max(limit, 1)}
}

// Limit is the most descriptors the cache holds while no call is in progress.
func (c *FileCache) Limit() int { return c.limit }

// Stats returns the cache's counters.
func (c *FileCache) Stats() FileCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Open = c.open
	return s
}

// Create implements FS: the file is created, opened and counted.
func (c *FileCache) Create(path string) (File, error) { return c.counted(path, c.fs.Create) }

// OpenFile implements FS: the file is opened and counted.
func (c *FileCache) OpenFile(path string) (File, error) { return c.counted(path, c.fs.OpenFile) }

// counted opens path with open once the cache has room for one more descriptor, and
// admits the handle; a failed open gives the room back.
func (c *FileCache) counted(path string, open func(string) (File, error)) (File, error) {
	c.reserve()
	f, err := open(path)
	if err != nil {
		c.unreserve()
		return nil, err
	}
	return c.admit(path, f), nil
}

// Open implements FS; the read-only handle is not counted (callers hold it briefly).
func (c *FileCache) Open(path string) (File, error) { return c.fs.Open(path) }

// Remove implements FS.
func (c *FileCache) Remove(path string) error { return c.fs.Remove(path) }

// Rename implements FS. A handle open under oldpath must not be used after it.
func (c *FileCache) Rename(oldpath, newpath string) error { return c.fs.Rename(oldpath, newpath) }

// MkdirAll implements FS.
func (c *FileCache) MkdirAll(path string) error { return c.fs.MkdirAll(path) }

// Mkdir implements FS.
func (c *FileCache) Mkdir(path string) error { return c.fs.Mkdir(path) }

// SyncEntry implements FS.
func (c *FileCache) SyncEntry(dir string) error { return c.fs.SyncEntry(dir) }

// SyncDir implements FS.
func (c *FileCache) SyncDir(dir string) error { return c.fs.SyncDir(dir) }

// ReadDir implements FS.
func (c *FileCache) ReadDir(path string) ([]string, error) { return c.fs.ReadDir(path) }

// Stat implements FS.
func (c *FileCache) Stat(path string) (int64, error) { return c.fs.Stat(path) }

// reserve counts a descriptor about to be opened and closes others first if the new
// one would pass the limit, so the limit holds at every instant.
func (c *FileCache) reserve() {
	c.mu.Lock()
	c.open++
	victims := c.victimsLocked()
	c.mu.Unlock()
	c.evict(victims)
}

func (c *FileCache) unreserve() {
	c.mu.Lock()
	c.open--
	c.mu.Unlock()
}

// admit adds a file opened under a reservation.
func (c *FileCache) admit(path string, f File) *cachedFile {
	h := &cachedFile{c: c, path: path, size: f.Size()}
	c.mu.Lock()
	h.f = f
	h.elem = c.lru.PushFront(h)
	c.stats.Peak = max(c.stats.Peak, c.open)
	c.mu.Unlock()
	return h
}

// victim is a handle detached from the cache for closing.
type victim struct {
	h     *cachedFile
	f     File
	dirty bool
}

// victimsLocked detaches the least recently used unpinned handles until the open ones
// fit the limit. Each is marked busy until evict has closed it.
func (c *FileCache) victimsLocked() []victim {
	var vs []victim
	for e := c.lru.Back(); e != nil && c.open-c.closing > c.limit; {
		prev := e.Prev()
		if h := e.Value.(*cachedFile); h.pins == 0 {
			c.lru.Remove(e)
			vs = append(vs, victim{h: h, f: h.f, dirty: h.dirty})
			h.f, h.elem, h.busy = nil, nil, make(chan struct{})
			c.closing++
		}
		e = prev
	}
	return vs
}

// evict closes detached handles, fsyncing first those with unsynced changes.
func (c *FileCache) evict(vs []victim) {
	for _, v := range vs {
		var serr error
		if v.dirty {
			serr = v.f.Sync()
		}
		_ = v.f.Close()
		c.mu.Lock()
		c.open--
		c.closing--
		c.stats.Evictions++
		if v.dirty {
			c.stats.EvictSync++
		}
		h := v.h
		if serr != nil && h.err == nil {
			h.err = fmt.Errorf("%s: %w: %w", h.path, errEvictSync, serr)
		}
		if serr == nil {
			h.dirty = false
		}
		close(h.busy)
		h.busy = nil
		c.mu.Unlock()
	}
}

// cachedFile is a File whose descriptor the cache may close between calls.
type cachedFile struct {
	c    *FileCache
	path string

	// Guarded by c.mu.
	f      File          // nil while evicted
	elem   *list.Element // in c.lru while f is open
	pins   int           // calls in progress
	busy   chan struct{} // non-nil while the handle is being opened or closed
	dirty  bool          // written or truncated since its last successful fsync
	err    error         // an eviction's fsync failed
	closed bool
	size   int64
}

// acquire pins the handle open, reopening it if it was evicted. With forWrite, a kept
// eviction error is returned instead.
func (h *cachedFile) acquire(forWrite bool) (File, error) {
	c := h.c
	c.mu.Lock()
	h.waitIdleLocked()
	switch {
	case h.closed:
		c.mu.Unlock()
		return nil, &fs.PathError{Op: "use", Path: h.path, Err: fs.ErrClosed}
	case forWrite && h.err != nil:
		c.mu.Unlock()
		return nil, h.err
	case h.f != nil:
		h.pins++
		c.lru.MoveToFront(h.elem)
		c.mu.Unlock()
		return h.f, nil
	}
	ch := make(chan struct{})
	h.busy = ch
	c.open++
	victims := c.victimsLocked()
	c.mu.Unlock()
	c.evict(victims)
	f, err := c.fs.OpenFile(h.path)
	c.mu.Lock()
	h.busy = nil
	close(ch)
	if err != nil {
		c.open--
		c.mu.Unlock()
		return nil, fmt.Errorf("reopen evicted file: %w", err)
	}
	h.f, h.elem = f, c.lru.PushFront(h)
	h.pins++
	c.stats.Reopens++
	c.stats.Peak = max(c.stats.Peak, c.open)
	c.mu.Unlock()
	return f, nil
}

// waitIdleLocked waits, releasing the cache's mutex meanwhile, until no open or close
// of the handle is in progress.
func (h *cachedFile) waitIdleLocked() {
	for h.busy != nil && !h.closed {
		ch := h.busy
		h.c.mu.Unlock()
		<-ch
		h.c.mu.Lock()
	}
}

// release unpins the handle; update runs under the cache's mutex. The last call of a
// handle closed meanwhile closes its descriptor.
func (h *cachedFile) release(update func()) {
	c := h.c
	c.mu.Lock()
	h.pins--
	if update != nil {
		update()
	}
	var last File
	if h.closed && h.pins == 0 && h.f != nil {
		last, h.f = h.f, nil
		c.open--
	}
	victims := c.victimsLocked()
	c.mu.Unlock()
	if last != nil {
		_ = last.Close()
	}
	c.evict(victims)
}

func (h *cachedFile) ReadAt(p []byte, off int64) (int, error) {
	f, err := h.acquire(false)
	if err != nil {
		return 0, err
	}
	defer h.release(nil)
	return f.ReadAt(p, off)
}

func (h *cachedFile) Write(p []byte) (int, error) {
	f, err := h.acquire(true)
	if err != nil {
		return 0, err
	}
	n, err := f.Write(p)
	h.release(func() {
		h.dirty = true
		h.size += int64(n)
	})
	return n, err
}

func (h *cachedFile) Truncate(size int64) error {
	f, err := h.acquire(false)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	h.release(func() {
		h.dirty = true
		if err == nil {
			h.size = size
		}
	})
	return err
}

// Sync fsyncs the open descriptor. An evicted handle was fsynced when it was closed,
// so there is nothing to do, unless that fsync failed.
func (h *cachedFile) Sync() error {
	c := h.c
	c.mu.Lock()
	h.waitIdleLocked()
	switch {
	case h.closed:
		c.mu.Unlock()
		return &fs.PathError{Op: "sync", Path: h.path, Err: fs.ErrClosed}
	case h.err != nil:
		c.mu.Unlock()
		return h.err
	case h.f == nil:
		c.mu.Unlock()
		return nil
	}
	f := h.f
	h.pins++
	// Writes from here on set dirty again, whether or not this fsync covers them.
	h.dirty = false
	c.mu.Unlock()
	err := f.Sync()
	h.release(func() {
		if err != nil {
			h.dirty = true
		}
	})
	return err
}

// Close closes the descriptor, if open, without fsyncing, and forgets the handle; it
// returns a kept eviction failure. A call still in progress on another goroutine (a
// Sync on a sync worker while the loop removes the segment) keeps the descriptor until
// it returns: the last release closes it, so no FS needs a close that is safe during an
// fsync, and later calls of the handle fail with fs.ErrClosed.
func (h *cachedFile) Close() error {
	c := h.c
	c.mu.Lock()
	h.waitIdleLocked()
	if h.closed {
		c.mu.Unlock()
		return &fs.PathError{Op: "close", Path: h.path, Err: fs.ErrClosed}
	}
	h.closed = true
	kept := h.err
	f := h.f
	if f != nil {
		c.lru.Remove(h.elem)
		h.elem = nil
		if h.pins > 0 {
			c.mu.Unlock()
			return kept
		}
		h.f = nil
		c.open--
	}
	c.mu.Unlock()
	if f != nil {
		if err := f.Close(); err != nil && kept == nil {
			return err
		}
	}
	return kept
}

func (h *cachedFile) Size() int64 {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	return h.size
}
