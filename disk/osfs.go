package disk

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
)

// OSFS is the real filesystem. Like the system calls under it, it does not fsync a
// directory after adding, removing or renaming an entry: the caller does, with SyncDir,
// once per batch of changes (FS's durability contract).
type OSFS struct{}

var _ FS = OSFS{}

// Create implements FS.
func (OSFS) Create(path string) (File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

// OpenFile implements FS.
func (OSFS) OpenFile(path string) (File, error) {
	return openOS(path, os.O_RDWR|os.O_APPEND)
}

// Open implements FS.
func (OSFS) Open(path string) (File, error) {
	return openOS(path, os.O_RDONLY)
}

func openOS(path string, flag int) (File, error) {
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if st.IsDir() {
		_ = f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: errors.New("is a directory")}
	}
	return &osFile{f: f, size: st.Size()}, nil
}

// Remove implements FS.
func (OSFS) Remove(path string) error { return os.Remove(path) }

// Rename implements FS.
func (OSFS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// MkdirAll implements FS. It fsyncs every ancestor of the directory, even when the
// directory already existed: a run killed between creating it and syncing its parent
// would otherwise leave an entry the next run never makes durable. Directories are
// created rarely (a partition at a time), so the extra fsyncs cost nothing that matters.
func (OSFS) MkdirAll(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	for p := path; ; {
		parent := filepath.Dir(p)
		if err := syncDir(parent); err != nil {
			return err
		}
		if parent == p || parent == "." || parent == "/" {
			return nil
		}
		p = parent
	}
}

// Mkdir implements FS: one mkdir(2), no fsync.
func (OSFS) Mkdir(path string) error { return os.Mkdir(path, 0o755) }

// SyncDir implements FS: one fsync of the directory.
func (OSFS) SyncDir(dir string) error { return syncDir(dir) }

// SyncEntry implements FS: it fsyncs the directory, then its parent.
func (OSFS) SyncEntry(dir string) error {
	if err := syncDir(dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

// ReadDir implements FS.
func (OSFS) ReadDir(path string) ([]string, error) {
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	sort.Strings(names)
	return names, nil
}

// Stat implements FS.
func (OSFS) Stat(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// osFile tracks the size itself so Size costs no syscall. The file is opened with
// O_APPEND, so Write is one write(2) at the end whatever the offset.
type osFile struct {
	f    *os.File
	size int64
}

func (o *osFile) ReadAt(p []byte, off int64) (int, error) { return o.f.ReadAt(p, off) }

func (o *osFile) Write(p []byte) (int, error) {
	n, err := o.f.Write(p)
	o.size += int64(n)
	return n, err
}

func (o *osFile) Sync() error { return o.f.Sync() }

func (o *osFile) Truncate(size int64) error {
	if err := o.f.Truncate(size); err != nil {
		return err
	}
	o.size = size
	return nil
}

func (o *osFile) Close() error { return o.f.Close() }

func (o *osFile) Size() int64 { return o.size }
