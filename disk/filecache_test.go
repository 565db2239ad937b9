package disk

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/replica"
)

func TestFileCacheBoundsOpenFilesAndReopensEvictedOnes(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("d"))
	c := NewFileCache(m, 3)
	var fs []File
	for i := range 10 {
		f, err := c.Create(fmt.Sprintf("d/f%d", i))
		require.NoError(t, err)
		_, err = f.Write([]byte(fmt.Sprintf("file %d", i)))
		require.NoError(t, err)
		fs = append(fs, f)
		require.LessOrEqual(t, c.Stats().Open, 3)
	}
	for i, f := range fs {
		want := fmt.Sprintf("file %d", i)
		require.Equal(t, int64(len(want)), f.Size())
		got := make([]byte, len(want))
		_, err := f.ReadAt(got, 0)
		require.NoError(t, err)
		require.Equal(t, want, string(got))
		_, err = f.Write([]byte("!"))
		require.NoError(t, err)
		require.LessOrEqual(t, c.Stats().Open, 3)
	}
	st := c.Stats()
	require.Equal(t, 3, st.Peak)
	require.GreaterOrEqual(t, st.Reopens, 10)
	for _, f := range fs {
		require.NoError(t, f.Close())
	}
	require.Zero(t, c.Stats().Open)
	b, err := m.ReadFile("d/f4")
	require.NoError(t, err)
	require.Equal(t, "file 4!", string(b))
}

// A file closed by eviction after a write is fsynced first: the bytes survive a crash
// although the caller's Sync found the handle closed and did nothing.
func TestFileCacheEvictionKeepsWrittenBytesDurable(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("d"))
	c := NewFileCache(m, 1)
	a, err := c.Create("d/a")
	require.NoError(t, err)
	_, err = a.Write([]byte("acknowledged"))
	require.NoError(t, err)
	b, err := c.Create("d/b") // evicts a
	require.NoError(t, err)
	require.Equal(t, 1, c.Stats().EvictSync)
	ops := countOps(m)
	require.NoError(t, a.Sync())
	require.Zero(t, ops[OpSync]+ops[OpOpen], "sync of an evicted, fsynced handle is free")
	_, err = b.Write([]byte("unsynced"))
	require.NoError(t, err)
	m.SetFault(nil)
	require.NoError(t, m.SyncDir("d")) // the entries are durable
	m.Crash(rand.New(rand.NewSource(1)))
	got, err := m.ReadFile("d/a")
	require.NoError(t, err)
	require.Equal(t, "acknowledged", string(got))
}

// Without the fsync at eviction, a write then eviction then Sync would claim bytes
// durable that a crash loses; prove the test above can fail by evicting a clean handle
// and writing through the reopened one.
func TestFileCacheSyncAfterReopenCoversWritesSinceEviction(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("d"))
	c := NewFileCache(m, 1)
	a, err := c.Create("d/a")
	require.NoError(t, err)
	_, err = c.Create("d/b") // evicts a, clean: no fsync
	require.NoError(t, err)
	require.Zero(t, c.Stats().EvictSync)
	_, err = a.Write([]byte("later")) // reopens a, evicts b
	require.NoError(t, err)
	require.NoError(t, a.Sync())
	require.NoError(t, m.SyncDir("d")) // the entries are durable
	m.Crash(rand.New(rand.NewSource(1)))
	got, err := m.ReadFile("d/a")
	require.NoError(t, err)
	require.Equal(t, "later", string(got))
}

// A failed fsync at eviction is not lost: the next Sync and Write report it, while
// ReadAt and Truncate still work so the log can drop what the fsync may have lost.
func TestFileCacheEvictionFsyncFailureIsReportedBySyncAndWrite(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("d"))
	c := NewFileCache(m, 1)
	a, err := c.Create("d/a")
	require.NoError(t, err)
	_, err = a.Write([]byte("bytes"))
	require.NoError(t, err)
	boom := errors.New("EIO")
	m.SetFault(func(op Op, p string) error {
		if op == OpSync && p == "d/a" {
			return boom
		}
		return nil
	})
	_, err = c.Create("d/b")
	require.NoError(t, err, "the eviction's failure belongs to a, not to b's creation")
	m.SetFault(nil)
	require.ErrorIs(t, a.Sync(), boom)
	require.ErrorIs(t, a.Sync(), boom, "the failure is kept")
	_, err = a.Write([]byte("more"))
	require.ErrorIs(t, err, boom)
	got := make([]byte, 5)
	_, err = a.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, "bytes", string(got))
	require.NoError(t, a.Truncate(0))
	require.Zero(t, a.Size())
}

// The fast path: a write or read of an open handle costs the one operation, no open.
func TestFileCacheOpenHandleCostsNoExtraOperation(t *testing.T) {
	m := NewMemFS()
	require.NoError(t, m.MkdirAll("d"))
	c := NewFileCache(m, 4)
	a, err := c.Create("d/a")
	require.NoError(t, err)
	ops := countOps(m)
	for range 100 {
		_, err = a.Write([]byte("x"))
		require.NoError(t, err)
	}
	_, err = a.ReadAt(make([]byte, 1), 0)
	require.NoError(t, err)
	require.Equal(t, map[Op]int{OpWrite: 100, OpRead: 1}, ops)
}

// Many partition logs over a small cache: every log stays readable and writable, the
// descriptors stay within the limit plus the calls in progress, and a restart recovers
// everything durable.
func TestPartitionLogsShareABoundedFileCache(t *testing.T) {
	m := NewMemFS()
	st := NewMemState()
	cfg := replica.SegmentConfig{SegmentBytes: 600, IndexInterval: 100}
	open := func(c *FileCache) []*PartitionLog {
		logs := make([]*PartitionLog, 30)
		for i := range logs {
			var err error
			logs[i], err = OpenPartitionLog(c, fmt.Sprintf("data/t-%d", i), st,
				fmt.Sprintf("log/t-%d/", i), cfg, 1000, zap.NewNop())
			require.NoError(t, err)
		}
		return logs
	}
	c := NewFileCache(m, 4)
	logs := open(c)
	r := rand.New(rand.NewSource(3))
	var wg sync.WaitGroup
	for round := range 20 {
		for _, l := range logs {
			appendBatch(t, l, 1000, 1+r.Intn(3), 40, int64(round))
		}
		// Syncs run beside appends, as the runtime's syncer runs them.
		wg.Add(1)
		go func(ls []*PartitionLog) {
			defer wg.Done()
			for _, l := range ls {
				require.NoError(t, l.Sync())
			}
		}(append([]*PartitionLog(nil), logs...))
		for _, l := range logs {
			b, err := l.Read(l.StartOffset(), 1<<20, l.EndOffset())
			require.NoError(t, err)
			require.NotEmpty(t, splitBatches(t, b))
		}
		wg.Wait()
	}
	for _, l := range logs {
		require.Greater(t, len(l.Segments()), 2)
	}
	st0 := c.Stats()
	require.LessOrEqual(t, st0.Peak, 4+2, "limit plus the calls in progress")
	require.Positive(t, st0.Reopens)
	ends := make([]int64, len(logs))
	for i, l := range logs {
		ends[i] = l.EndOffset()
	}
	m.Crash(rand.New(rand.NewSource(4)))
	logs = open(NewFileCache(m, 4))
	for i, l := range logs {
		require.Equal(t, ends[i], l.EndOffset(), "every byte was synced")
		b, err := l.Read(l.StartOffset(), 1<<20, l.EndOffset())
		require.NoError(t, err)
		require.NotEmpty(t, splitBatches(t, b))
	}
}

// An eviction's failed fsync reaches the log that owns the file: its next Append takes
// it offline and drops the unsynced bytes, as a failed Sync does, and closing it marks it
// tainted so the next recovery rewrites it. The synced batch survives a crash after that.
func TestFailedFsyncAtEvictionTakesTheLogOfflineAndTaintsIt(t *testing.T) {
	m := NewMemFS()
	st := NewMemState()
	c := NewFileCache(m, 1)
	open := logOpener(t, st)
	a := open(c, "a-0")
	synced := appendBatch(t, a, 1000, 2, 30, 1)
	require.NoError(t, a.Sync())
	appendBatch(t, a, 1000, 2, 30, 2) // unsynced
	boom := errors.New("EIO")
	m.SetFault(func(op Op, p string) error {
		if op == OpSync && p == "data/a-0/00000000000000000000.log" {
			return boom
		}
		return nil
	})
	b := open(c, "b-0") // evicts a's segment; its fsync fails
	m.SetFault(nil)
	require.Equal(t, 1, c.Stats().EvictSync)
	h, batchB := testBatch(a.EndOffset(), 1, 10, 3)
	err := a.Append(1000, h, batchB)
	require.ErrorIs(t, err, replica.ErrLogOffline)
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, a.Sync(), replica.ErrLogOffline)
	require.NoError(t, b.Close())
	require.Error(t, a.Close())
	_, tainted, err := st.Get([]byte("log/a-0/tainted"))
	require.NoError(t, err)
	require.True(t, tainted)

	m.Crash(rand.New(rand.NewSource(5)))
	a = open(NewFileCache(m, 1), "a-0")
	defer a.Close()
	require.EqualValues(t, 2, a.EndOffset(), "the synced batch, and only it")
	got, err := a.Read(0, 1<<20, a.EndOffset())
	require.NoError(t, err)
	require.Equal(t, synced, got)
	_, tainted, err = st.Get([]byte("log/a-0/tainted"))
	require.NoError(t, err)
	require.False(t, tainted, "the rewrite cleared the mark")
}
