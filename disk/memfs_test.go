package disk

import (
	"errors"
	"io"
	"io/fs"
	"math/rand"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMemFSCrashKeepsSyncedAndTearsTheRest(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		m := NewMemFS()
		require.NoError(t, m.MkdirAll("d"))
		f, err := m.Create("d/f")
		require.NoError(t, err)
		synced := []byte("durable-bytes")
		_, err = f.Write(synced)
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		tail := []byte("unsynced-tail-0123456789")
		_, err = f.Write(tail)
		require.NoError(t, err)

		require.NoError(t, m.SyncDir("d")) // the entry is durable
		m.Crash(rand.New(rand.NewSource(seed)))
		got, err := m.ReadFile("d/f")
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(got), len(synced))
		require.LessOrEqual(t, len(got), len(synced)+len(tail))
		require.Equal(t, synced, got[:len(synced)], "seed %d: synced bytes changed", seed)
		// Only the last maxGarbleBytes surviving bytes may differ from what was written.
		survived := got[len(synced):]
		intact := max(0, len(survived)-maxGarbleBytes)
		require.Equal(t, tail[:intact], survived[:intact])

		// The old handle belongs to the crashed process.
		_, err = f.Write([]byte("x"))
		require.ErrorIs(t, err, errStale)
	}
}

func TestMemFSCrashIsDeterministic(t *testing.T) {
	run := func() []byte {
		m := NewMemFS()
		f, err := m.Create("f")
		require.NoError(t, err)
		_, _ = f.Write(make([]byte, 1000))
		require.NoError(t, m.SyncDir(".")) // the entry is durable
		m.Crash(rand.New(rand.NewSource(42)))
		b, _ := m.ReadFile("f")
		return b
	}
	require.Equal(t, run(), run())
}

func TestMemFSUnsyncedTruncationIsUndoneByCrash(t *testing.T) {
	m := NewMemFS()
	f, err := m.Create("f")
	require.NoError(t, err)
	_, _ = f.Write([]byte("0123456789"))
	require.NoError(t, f.Sync())
	require.NoError(t, f.Truncate(4))
	_, _ = f.Write([]byte("ab"))
	got, _ := m.ReadFile("f")
	require.Equal(t, "0123ab", string(got))
	require.NoError(t, m.SyncDir(".")) // the entry is durable
	m.Crash(rand.New(rand.NewSource(1)))
	got, _ = m.ReadFile("f")
	require.Equal(t, "0123456789", string(got))

	// Once synced, the truncation is durable.
	f, err = m.OpenFile("f")
	require.NoError(t, err)
	require.NoError(t, f.Truncate(3))
	require.NoError(t, f.Sync())
	m.Crash(rand.New(rand.NewSource(1)))
	got, _ = m.ReadFile("f")
	require.Equal(t, "012", string(got))
}

func TestMemFSDirectoryOperations(t *testing.T) {
	m := NewMemFS()
	_, err := m.Create("nodir/f")
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.NoError(t, m.MkdirAll("a/b"))
	for _, n := range []string{"a/b/z", "a/b/a", "a/b/m"} {
		_, err := m.Create(n)
		require.NoError(t, err)
	}
	require.NoError(t, m.MkdirAll("a/b/sub"))
	names, err := m.ReadDir("a/b")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "m", "sub", "z"}, names)

	require.NoError(t, m.Rename("a/b/a", "a/b/y"))
	require.ErrorIs(t, m.Remove("a/b"), syscall.ENOTEMPTY)
	require.NoError(t, m.Remove("a/b/z"))
	// Directory operations survive a crash once the directory is synced.
	require.NoError(t, m.SyncDir("a/b"))
	m.Crash(rand.New(rand.NewSource(3)))
	names, err = m.ReadDir("a/b")
	require.NoError(t, err)
	require.Equal(t, []string{"m", "sub", "y"}, names)
	_, err = m.Stat("a/b/z")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestMemFSFaults(t *testing.T) {
	m := NewMemFS()
	f, err := m.Create("f")
	require.NoError(t, err)
	eio := syscall.EIO
	m.SetFault(func(op Op, _ string) error {
		if op == OpWrite || op == OpSync {
			return eio
		}
		return nil
	})
	n, err := f.Write([]byte("abcd"))
	require.ErrorIs(t, err, eio)
	require.Equal(t, 2, n, "a failed write is a short write")
	require.ErrorIs(t, f.Sync(), eio)
	m.SetFault(nil)
	require.NoError(t, m.SyncDir(".")) // the entry is durable
	m.Crash(rand.New(rand.NewSource(0)))
	got, _ := m.ReadFile("f")
	require.LessOrEqual(t, len(got), 2, "a failed sync makes nothing durable")
}

func TestMemFSReadAtAndReadOnly(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.WriteFile("f", []byte("hello")))
	f, err := m.Open("f")
	require.NoError(t, err)
	buf := make([]byte, 3)
	n, err := f.ReadAt(buf, 3)
	require.Equal(t, 2, n)
	require.True(t, errors.Is(err, io.EOF))
	_, err = f.Write([]byte("x"))
	require.ErrorIs(t, err, fs.ErrPermission)
	require.NoError(t, f.Close())
	_, err = f.ReadAt(buf, 0)
	require.ErrorIs(t, err, fs.ErrClosed)
}

// After a failed fsync the unwritten bytes stay readable, but no later fsync writes them:
// a crash turns them into zeros even though a later Sync covered bytes after them.
func TestMemFSFailedSyncLosesItsBytesForGood(t *testing.T) {
	m := NewMemFS()
	f, err := m.Create("f")
	require.NoError(t, err)
	_, err = f.Write([]byte("durable|"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.Write([]byte("lost|"))
	require.NoError(t, err)
	m.SetFault(func(op Op, _ string) error {
		if op == OpSync {
			return syscall.EIO
		}
		return nil
	})
	require.ErrorIs(t, f.Sync(), syscall.EIO)
	m.SetFault(nil)
	got, err := m.ReadFile("f")
	require.NoError(t, err)
	require.Equal(t, "durable|lost|", string(got), "the page cache still serves them")

	_, err = f.Write([]byte("later"))
	require.NoError(t, err)
	require.NoError(t, f.Sync(), "a retried fsync reports success")
	require.NoError(t, m.SyncDir(".")) // the entry is durable
	m.Crash(rand.New(rand.NewSource(1)))
	got, err = m.ReadFile("f")
	require.NoError(t, err)
	require.Equal(t, "durable|\x00\x00\x00\x00\x00later", string(got))
}

// Truncating the bytes a failed fsync lost ends the hazard: what is appended after them
// and synced survives a crash whole.
func TestMemFSTruncateDropsLostBytes(t *testing.T) {
	m := NewMemFS()
	f, err := m.Create("f")
	require.NoError(t, err)
	_, err = f.Write([]byte("durable|lost"))
	require.NoError(t, err)
	m.SetFault(func(Op, string) error { return syscall.EIO })
	require.Error(t, f.Sync())
	m.SetFault(nil)
	require.NoError(t, f.Truncate(0))
	_, err = f.Write([]byte("fresh"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir(".")) // the entry is durable
	m.Crash(rand.New(rand.NewSource(1)))
	got, err := m.ReadFile("f")
	require.NoError(t, err)
	require.Equal(t, "fresh", string(got))
}

// Bytes rewritten after a truncation into the durable part are dirty too: a failed
// fsync loses them, and a later successful one does not write them.
func TestMemFSFailedSyncAfterTruncationLosesTheRewrittenBytes(t *testing.T) {
	m := NewMemFS()
	f, err := m.Create("f")
	require.NoError(t, err)
	_, err = f.Write([]byte("0123456789"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Truncate(4))
	_, err = f.Write([]byte("abcdef"))
	require.NoError(t, err)
	m.SetFault(func(op Op, _ string) error {
		if op == OpSync {
			return syscall.EIO
		}
		return nil
	})
	require.Error(t, f.Sync())
	m.SetFault(nil)
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir(".")) // the entry is durable
	m.Crash(rand.New(rand.NewSource(1)))
	got, err := m.ReadFile("f")
	require.NoError(t, err)
	require.Equal(t, "0123\x00\x00\x00\x00\x00\x00", string(got))
}
