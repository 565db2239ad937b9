package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// fullFS is a pebble filesystem whose writes fail with ENOSPC once full is set, and
// whose creates block while hold is set (a start stuck on a slow disk).
type fullFS struct {
	vfs.FS
	full, hold chan struct{} // closed to switch the behaviour on
}

func newFullFS(inner vfs.FS) *fullFS {
	return &fullFS{FS: inner, full: make(chan struct{}), hold: make(chan struct{})}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (f *fullFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	if isClosed(f.hold) {
		select {} // never returns; the test abandons this open
	}
	if isClosed(f.full) {
		return nil, &os.PathError{Op: "create", Path: name, Err: syscall.ENOSPC}
	}
	file, err := f.FS.Create(name, cat)
	return &fullFile{File: file, fs: f}, err
}

func (f *fullFS) ReuseForWrite(old, name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	file, err := f.FS.ReuseForWrite(old, name, cat)
	return &fullFile{File: file, fs: f}, err
}

type fullFile struct {
	vfs.File
	fs *fullFS
}

func (f *fullFile) err() error {
	if isClosed(f.fs.full) {
		return syscall.ENOSPC
	}
	return nil
}

func (f *fullFile) Write(p []byte) (int, error) {
	if err := f.err(); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *fullFile) Sync() error {
	if err := f.err(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *fullFile) SyncData() error {
	if err := f.err(); err != nil {
		return err
	}
	return f.File.SyncData()
}

// stateWithUnflushedLog leaves a pebble store in mem whose write-ahead log holds data,
// so the next open must flush it to a table: the write that met ENOSPC at the start of
// a node on a full disk.
func stateWithUnflushedLog(t *testing.T, mem vfs.FS) {
	t.Helper()
	s, err := OpenPebbleStateFS(context.Background(), mem, "state", zap.NewNop())
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		require.NoError(t, s.Set(fmt.Appendf(nil, "k%02d", i), []byte("v")))
	}
	require.NoError(t, s.Close())
}

// Before the fix pebble.Open retried its flush of the replayed log forever (thousands of
// log lines a second); now the open ends at the first ENOSPC with an error that says so.
func TestPebbleStateOpenOnFullDiskFailsFast(t *testing.T) {
	mem := vfs.NewMem()
	stateWithUnflushedLog(t, mem)
	fs := newFullFS(mem)
	close(fs.full)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := OpenPebbleStateFS(ctx, fs, "state", zap.NewNop())
	require.Less(t, time.Since(start), 5*time.Second)
	var ns *NoSpaceError
	require.ErrorAs(t, err, &ns)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Equal(t, "state", ns.Path)
	require.Contains(t, err.Error(), "disk full: state needs at least")
}

// A start stuck in the state store gives up when its context ends (a signal).
func TestPebbleStateOpenHonoursContext(t *testing.T) {
	mem := vfs.NewMem()
	stateWithUnflushedLog(t, mem)
	fs := newFullFS(mem)
	close(fs.hold)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := OpenPebbleStateFS(ctx, fs, "state", zap.NewNop())
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 5*time.Second)
}

// A write-ahead-log write that meets ENOSPC is fatal to pebble (Logger.Fatalf); the
// store returns it as an error, from that write and every later one, without a panic.
func TestPebbleStateWriteOnFullDiskReturnsError(t *testing.T) {
	fs := newFullFS(vfs.NewMem())
	s, err := OpenPebbleStateFS(context.Background(), fs, "state", zap.NewNop())
	require.NoError(t, err)
	require.NoError(t, s.Set([]byte("a"), []byte("1")))
	close(fs.full)
	err = s.Set([]byte("b"), []byte("2"))
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Contains(t, err.Error(), "state store state failed")
	require.ErrorIs(t, s.Delete([]byte("a")), syscall.ENOSPC)
	v, ok, err := s.Get([]byte("a"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "1", string(v))
}

// The free-space check before opening names the directory and the space it needs.
func TestCheckStateSpace(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, checkStateSpace(dir))
	require.NoError(t, os.WriteFile(dir+"/000002.log", make([]byte, 3000), 0o644))
	require.Equal(t, uint64(6000+MinStateFreeBytes), stateNeed(dir))
	err := (&NoSpaceError{Path: "/d/state", Free: 0, Need: stateNeed(dir)}).Error()
	require.Equal(t, "disk full: /d/state needs at least 1.0 MiB free to start and its "+
		"filesystem has 0 B; free some space there or move the data directory", err)
	require.True(t, errors.Is(&NoSpaceError{}, syscall.ENOSPC))
	require.Equal(t, "1.5 GiB", byteSize(3<<29))
}
