package disk

import (
	"errors"
	"io/fs"
	"math/rand"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// The rules of MemFS's model of when things become durable (memfs_flight.go). Each test
// fails on the model before it, which made directory operations durable on return and
// an fsync durable up to the file's length when it ran.

func writeNew(t *testing.T, m *MemFS, p string, data string) File {
	t.Helper()
	f, err := m.Create(p)
	require.NoError(t, err)
	_, err = f.Write([]byte(data))
	require.NoError(t, err)
	return f
}

func readString(t *testing.T, m *MemFS, p string) string {
	t.Helper()
	b, err := m.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// An fsync makes durable only the bytes written before it began; bytes appended while
// it is in flight wait for the next one, and a crash before it lands loses it.
func TestMemFSFsyncCoversOnlyWhatWasWrittenBeforeItBegan(t *testing.T) {
	m := NewMemFS()
	f := writeNew(t, m, "f", "before-")
	require.NoError(t, m.SyncDir("."))
	fl := m.Fly(func() { require.NoError(t, f.Sync()) })
	_, err := f.Write([]byte("during"))
	require.NoError(t, err)
	fl.Land()
	m.Crash(zeroRand{}) // keeps no unsynced byte
	require.Equal(t, "before-", readString(t, m, "f"))

	f, err = m.OpenFile("f")
	require.NoError(t, err)
	_, err = f.Write([]byte("x"))
	require.NoError(t, err)
	fl = m.Fly(func() { require.NoError(t, f.Sync()) })
	m.Crash(zeroRand{}) // before the fsync landed
	fl.Land()           // a landing after the crash changes nothing
	require.Equal(t, "before-", readString(t, m, "f"))
}

// A truncation while an fsync is in flight lowers what it lands to the bytes it saw.
func TestMemFSTruncationInFlightLowersTheFsync(t *testing.T) {
	m := NewMemFS()
	f := writeNew(t, m, "f", "0123456789")
	require.NoError(t, m.SyncDir("."))
	fl := m.Fly(func() { require.NoError(t, f.Sync()) })
	require.NoError(t, f.Truncate(4))
	_, err := f.Write([]byte("abcdef"))
	require.NoError(t, err)
	fl.Land()
	m.Crash(zeroRand{})
	require.Equal(t, "0123", readString(t, m, "f"))
}

// Creating, removing and renaming a file are undone by a crash until the directory is
// synced; a directory's own entry needs its parent synced.
func TestMemFSDirectoryEntriesNeedADirectorySync(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("d"))
	for _, p := range []string{"d/old", "d/gone", "d/moved"} {
		require.NoError(t, writeNew(t, m, p, p).Sync())
	}
	require.NoError(t, m.SyncDir("d"))
	require.NoError(t, writeNew(t, m, "d/new", "new").Sync())
	require.NoError(t, m.Remove("d/gone"))
	require.NoError(t, m.Rename("d/moved", "d/renamed"))
	require.NoError(t, m.Mkdir("d/sub"))
	require.NoError(t, writeNew(t, m, "d/sub/f", "f").Sync())
	require.NoError(t, m.SyncDir("d/sub"))

	m.Crash(zeroRand{})
	names, err := m.ReadDir("d")
	require.NoError(t, err)
	require.Equal(t, []string{"gone", "moved", "old"}, names, "every change was undone")
	require.Equal(t, "d/gone", readString(t, m, "d/gone"), "with its durable content")

	require.NoError(t, writeNew(t, m, "d/new", "new").Sync())
	require.NoError(t, m.Remove("d/gone"))
	require.NoError(t, m.Rename("d/moved", "d/renamed"))
	require.NoError(t, m.SyncDir("d"))
	m.Crash(zeroRand{})
	names, err = m.ReadDir("d")
	require.NoError(t, err)
	require.Equal(t, []string{"new", "old", "renamed"}, names)
	require.Equal(t, "d/moved", readString(t, m, "d/renamed"))
}

// A directory fsync in flight covers the entries as they were when it began, and one
// landing late never undoes a newer one that already landed.
func TestMemFSDirectorySyncInFlight(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("d"))
	require.NoError(t, writeNew(t, m, "d/a", "a").Sync())
	fl := m.Fly(func() { require.NoError(t, m.SyncDir("d")) })
	require.NoError(t, writeNew(t, m, "d/b", "b").Sync()) // created after it began
	fl.Land()
	m.Crash(zeroRand{})
	names, err := m.ReadDir("d")
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, names)

	fl = m.Fly(func() { require.NoError(t, m.SyncDir("d")) }) // sees a
	require.NoError(t, m.Remove("d/a"))
	require.NoError(t, m.SyncDir("d")) // sees nothing, lands first
	fl.Land()
	m.Crash(zeroRand{})
	names, err = m.ReadDir("d")
	require.NoError(t, err)
	require.Empty(t, names, "the late landing brought a removed file back")
}

// A removed directory whose removal is durable takes its durable entries with it: made
// again, it is empty after a crash.
func TestMemFSRemovedDirectoryStaysEmpty(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("p/d"))
	require.NoError(t, writeNew(t, m, "p/d/f", "f").Sync())
	require.NoError(t, m.SyncDir("p/d"))
	require.NoError(t, m.Remove("p/d/f"))
	require.NoError(t, m.Remove("p/d"))
	require.NoError(t, m.SyncDir("p"))
	require.NoError(t, m.Mkdir("p/d"))
	require.NoError(t, m.SyncEntry("p/d"))
	m.Crash(zeroRand{})
	names, err := m.ReadDir("p/d")
	require.NoError(t, err)
	require.Empty(t, names)
}

// After the k-th mutating operation the disk freezes: later operations fail with
// ErrFrozen and change nothing (a failed write is not even a short write), until Crash.
func TestMemFSFreezeAfterTheKthOperation(t *testing.T) {
	m := NewMemFS()
	f := writeNew(t, m, "f", "durable")
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir("."))
	m.FreezeAfter(2)
	_, err := m.ReadDir(".") // reads do not count
	require.NoError(t, err)
	_, err = f.Write([]byte("-one"))
	require.NoError(t, err)
	require.False(t, m.Frozen())
	require.NoError(t, f.Sync()) // the second: the last with an effect
	require.True(t, m.Frozen())
	n, err := f.Write([]byte("-two"))
	require.ErrorIs(t, err, ErrFrozen)
	require.Zero(t, n)
	require.ErrorIs(t, f.Sync(), ErrFrozen)
	_, err = m.Create("g")
	require.ErrorIs(t, err, ErrFrozen)
	require.ErrorIs(t, m.SyncDir("."), ErrFrozen)
	require.Equal(t, "durable-one", readString(t, m, "f"))

	m.Crash(rand.New(rand.NewSource(1)))
	require.False(t, m.Frozen())
	require.Equal(t, "durable-one", readString(t, m, "f"))
	_, err = m.Stat("g")
	require.True(t, errors.Is(err, fs.ErrNotExist))
}

// The outcome of a crash of a namespace with pending changes depends only on the
// CrashRand.
func TestMemFSNamespaceCrashIsDeterministic(t *testing.T) {
	run := func() []string {
		m := NewMemFS()
		require.NoError(t, m.MkdirAll("d"))
		for _, p := range []string{"d/a", "d/b", "d/c"} {
			writeNew(t, m, p, "some bytes to tear")
		}
		require.NoError(t, m.SyncDir("d"))
		require.NoError(t, m.Rename("d/a", "d/z"))
		m.Crash(rand.New(rand.NewSource(7)))
		var out []string
		names, _ := m.ReadDir("d")
		for _, n := range names {
			out = append(out, n+"="+readString(t, m, "d/"+n))
		}
		return out
	}
	require.Equal(t, run(), run())
}

// A failed fsync loses only the bytes no fsync in flight covers: those are the earlier
// fsync's writeback, already under way, and it lands them (seed 4599).
func TestMemFSFailedSyncSparesWhatAnFsyncInFlightCovers(t *testing.T) {
	m := NewMemFS()
	f := writeNew(t, m, "f", "acked|")
	require.NoError(t, m.SyncDir("."))
	fl := m.Fly(func() { require.NoError(t, f.Sync()) })
	_, err := f.Write([]byte("later"))
	require.NoError(t, err)
	m.SetFault(func(op Op, _ string) error {
		if op == OpSync {
			return syscall.EIO
		}
		return nil
	})
	require.Error(t, f.Sync())
	m.SetFault(nil)
	fl.Land()
	m.Crash(zeroRand{})
	require.Equal(t, "acked|", readString(t, m, "f"))
}
