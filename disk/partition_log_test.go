package disk

import (
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

var smallSegments = replica.SegmentConfig{SegmentBytes: 2000, IndexInterval: 256}

func TestPartitionLogAppendAndReadEveryOffset(t *testing.T) {
	l := openTestLog(t, NewMemFS(), NewMemState(), smallSegments)
	defer l.Close()
	var batches [][]byte
	for i := 0; i < 60; i++ {
		batches = append(batches, appendBatch(t, l, 1000, 1+i%4, 20+i, int64(i)))
	}
	require.Greater(t, len(l.Segments()), 3, "small segments must roll")
	off := int64(0)
	for _, b := range batches {
		h, _ := batch.ParseHeader(b)
		for o := h.BaseOffset; o < h.NextOffset(); o++ {
			got, err := l.Read(o, 1, l.EndOffset())
			require.NoError(t, err)
			require.Equal(t, b, got, "offset %d returns the whole batch containing it", o)
		}
		off = h.NextOffset()
	}
	require.Equal(t, off, l.EndOffset())
}

func TestPartitionLogReadHonoursMaxBytesAndUpTo(t *testing.T) {
	l := openTestLog(t, NewMemFS(), NewMemState(), replica.SegmentConfig{IndexInterval: 100})
	defer l.Close()
	var sizes []int
	for i := 0; i < 20; i++ {
		sizes = append(sizes, len(appendBatch(t, l, 1000, 2, 50, 1)))
	}
	end := l.EndOffset()

	all, err := l.Read(0, 1<<20, end)
	require.NoError(t, err)
	require.Len(t, splitBatches(t, all), 20)

	// maxBytes cuts at a batch boundary; the first batch always comes back.
	got, err := l.Read(0, sizes[0]+sizes[1]+10, end)
	require.NoError(t, err)
	require.Len(t, splitBatches(t, got), 2)
	got, err = l.Read(0, 1, end)
	require.NoError(t, err)
	require.Len(t, splitBatches(t, got), 1)

	// upTo is exclusive and never splits a batch: batches hold offsets [2i, 2i+2).
	got, err = l.Read(4, 1<<20, 9)
	require.NoError(t, err)
	hs := splitBatches(t, got)
	require.Len(t, hs, 2)
	require.Equal(t, int64(4), hs[0].BaseOffset)
	require.Equal(t, int64(8), hs[1].NextOffset())
	got, err = l.Read(5, 1<<20, 5)
	require.NoError(t, err)
	require.Empty(t, got, "the batch holding 5 ends past upTo")

	_, err = l.Read(end, 100, end)
	require.ErrorIs(t, err, ErrOutOfRange)
	_, err = l.Read(-1, 100, end)
	require.ErrorIs(t, err, ErrOutOfRange)
}

func TestPartitionLogReadUsesTheIndexAndOneReadAt(t *testing.T) {
	m := NewMemFS()
	l := openTestLog(t, m, NewMemState(), replica.SegmentConfig{IndexInterval: 512})
	defer l.Close()
	for i := 0; i < 500; i++ {
		appendBatch(t, l, 1000, 1, 100, 1)
	}
	require.Len(t, l.Segments(), 1)
	seg := l.segs[0]
	require.Greater(t, len(seg.idx.offs), 50, "an entry about every 512 bytes")

	counts := countOps(m)
	got, err := l.Read(450, 1000, l.EndOffset())
	require.NoError(t, err)
	hs := splitBatches(t, got)
	require.Equal(t, int64(450), hs[0].BaseOffset)
	require.Equal(t, 1, counts[OpRead], "index lookup then a single ReadAt")
}

func TestPartitionLogRollsByTime(t *testing.T) {
	l := openTestLog(t, NewMemFS(), NewMemState(), replica.SegmentConfig{SegmentMs: 100})
	defer l.Close()
	appendBatch(t, l, 5000, 1, 10, 1)
	appendBatch(t, l, 5099, 1, 10, 1)
	require.Len(t, l.Segments(), 1)
	appendBatch(t, l, 5100, 1, 10, 1)
	segs := l.Segments()
	require.Len(t, segs, 2)
	require.Equal(t, int64(5000), segs[0].CreatedMs)
	require.Equal(t, int64(5100), segs[1].CreatedMs)
	require.Equal(t, int64(2), segs[1].BaseOffset)
}

func TestPartitionLogCreatedTimeSurvivesReopen(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, replica.SegmentConfig{SegmentMs: 100})
	appendBatch(t, l, 5000, 1, 10, 1)
	require.NoError(t, l.Close())
	cfg := replica.SegmentConfig{SegmentMs: 100}
	l, err := OpenPartitionLog(m, "data/t-0", st, "log/t-0/", cfg, 9999, zap.NewNop())
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, int64(5000), l.Segments()[0].CreatedMs)
	appendBatch(t, l, 5100, 1, 10, 1)
	require.Len(t, l.Segments(), 2, "age counts from the first batch, not from the reopen")
}

func TestPartitionLogTimestamps(t *testing.T) {
	cfg := replica.SegmentConfig{SegmentBytes: 1500, IndexInterval: 200}
	l := openTestLog(t, NewMemFS(), NewMemState(), cfg)
	defer l.Close()
	ts, off := l.MaxTimestamp()
	require.Equal(t, int64(-1), ts)
	require.Equal(t, int64(-1), off)
	// Timestamps rise by 10 per batch, except a dip and a repeat of the maximum.
	stamps := []int64{10, 20, 30, 25, 40, 50, 60, 70, 70, 80, 90, 100, 110, 120, 5, 130}
	var bases []int64
	for _, s := range stamps {
		bases = append(bases, l.EndOffset())
		appendBatch(t, l, 1000, 2, 60, s)
	}
	require.Greater(t, len(l.Segments()), 2)
	for i, s := range stamps {
		// The first batch whose max timestamp is >= s.
		want := -1
		for j, s2 := range stamps {
			if s2 >= s {
				want = j
				break
			}
		}
		got, ok, err := l.OffsetForTimestamp(s)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, bases[want], got, "timestamp %d (batch %d)", s, i)
	}
	_, ok, err := l.OffsetForTimestamp(131)
	require.NoError(t, err)
	require.False(t, ok)
	got, ok, err := l.OffsetForTimestamp(-5)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(0), got)

	ts, off = l.MaxTimestamp()
	require.Equal(t, int64(130), ts)
	require.Equal(t, bases[len(bases)-1], off)
}

func TestPartitionLogDeleteSegmentsBelow(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	for i := 0; i < 60; i++ {
		appendBatch(t, l, 1000, 2, 50, 1)
	}
	segs := l.Segments()
	require.Greater(t, len(segs), 4)
	require.NoError(t, l.Sync())

	// Below the end of the second segment: two segments go, not the third.
	require.NoError(t, l.DeleteSegmentsBelow(segs[1].EndOffset+1))
	after := l.Segments()
	require.Equal(t, segs[2:], after)
	require.Equal(t, segs[2].BaseOffset, l.StartOffset())
	names, err := m.ReadDir("data/t-0")
	require.NoError(t, err)
	for _, n := range names {
		base, _, ok := parseSegmentName(n)
		require.True(t, ok)
		require.GreaterOrEqual(t, base, segs[2].BaseOffset, "file %s must be gone", n)
	}
	_, err = l.Read(segs[1].BaseOffset, 100, l.EndOffset())
	require.ErrorIs(t, err, ErrOutOfRange)

	// Never the active segment.
	require.NoError(t, l.DeleteSegmentsBelow(l.EndOffset()+100))
	require.Len(t, l.Segments(), 1)
	require.Equal(t, segs[len(segs)-1].BaseOffset, l.StartOffset())
	end := l.EndOffset()
	require.NoError(t, l.Close())

	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, segs[len(segs)-1].BaseOffset, l.StartOffset())
	require.Equal(t, end, l.EndOffset())
}

func TestPartitionLogSetStartOffset(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	for i := 0; i < 10; i++ {
		appendBatch(t, l, 1000, 3, 10, 1)
	}
	require.NoError(t, l.SetStartOffset(7))
	require.Equal(t, int64(7), l.StartOffset())
	require.NoError(t, l.SetStartOffset(3), "moving backwards is a no-op")
	require.Equal(t, int64(7), l.StartOffset())
	require.ErrorIs(t, l.SetStartOffset(31), ErrOutOfRange)
	_, err := l.Read(6, 100, 30)
	require.ErrorIs(t, err, ErrOutOfRange)
	got, err := l.Read(7, 1, 30)
	require.NoError(t, err)
	require.Equal(t, int64(6), splitBatches(t, got)[0].BaseOffset, "the batch containing 7")

	var scanned []int64
	require.NoError(t, l.ScanHeaders(0, func(h batch.Header) error {
		scanned = append(scanned, h.BaseOffset)
		return nil
	}))
	require.Equal(t, []int64{6, 9, 12, 15, 18, 21, 24, 27}, scanned)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())

	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, int64(7), l.StartOffset(), "the start offset is durable")
}

func TestPartitionLogStartBeyondRecoveredEndStartsEmpty(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	for i := 0; i < 5; i++ {
		appendBatch(t, l, 1000, 2, 10, 1)
	}
	require.NoError(t, l.SetStartOffset(8))
	// Nothing was synced: a crash that keeps none of it leaves start past the end.
	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, int64(8), l.StartOffset())
	require.Equal(t, int64(8), l.EndOffset())
	appendBatch(t, l, 1000, 1, 10, 1)
	require.Equal(t, int64(9), l.EndOffset())
}

// zeroRand makes a crash keep no unsynced byte.
type zeroRand struct{}

func (zeroRand) Intn(int) int { return 0 }
func (zeroRand) Int63() int64 { return 0 }

func TestPartitionLogScanHeadersAcrossSegments(t *testing.T) {
	l := openTestLog(t, NewMemFS(), NewMemState(), smallSegments)
	defer l.Close()
	for i := 0; i < 700; i++ { // more than one scan chunk
		appendBatch(t, l, 1000, 1, 5, int64(i))
	}
	var next int64 = 5
	require.NoError(t, l.ScanHeaders(5, func(h batch.Header) error {
		require.Equal(t, next, h.BaseOffset)
		require.Equal(t, h.BaseOffset, h.MaxTimestamp)
		next = h.NextOffset()
		return nil
	}))
	require.Equal(t, l.EndOffset(), next)
	stop := errors.New("stop")
	require.ErrorIs(t, l.ScanHeaders(0, func(batch.Header) error { return stop }), stop)
}

func TestPartitionLogSnapshots(t *testing.T) {
	st := NewMemState()
	l := openTestLog(t, NewMemFS(), st, smallSegments)
	defer l.Close()
	_, _, found, err := l.LoadSnapshot()
	require.NoError(t, err)
	require.False(t, found)
	for i := 0; i < 10; i++ {
		appendBatch(t, l, 1000, 1, 5, 1)
	}
	for _, off := range []int64{2, 4, 9, 11} {
		require.NoError(t, l.SaveSnapshot(off, []byte{byte(off)}))
	}
	off, data, found, err := l.LoadSnapshot()
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, int64(9), off, "the newest at or below the end offset (10)")
	require.Equal(t, []byte{9}, data)
	n := 0
	require.NoError(t, st.Scan([]byte("log/t-0/snap/"), func(_, _ []byte) error { n++; return nil }))
	require.Equal(t, maxSnapshots, n, "old snapshots are pruned")
}

// Pruning keeps the newest snapshot at or below the start offset besides the newest
// few: it alone describes the producers of the deleted batches, and a truncation down
// to the start deletes every snapshot above it (simulator seed 2642).
func TestPartitionLogKeepsTheSnapshotAtItsStart(t *testing.T) {
	st := NewMemState()
	l := openTestLog(t, NewMemFS(), st, smallSegments)
	defer l.Close()
	for i := 0; i < 12; i++ {
		appendBatch(t, l, 1000, 1, 5, 1)
	}
	require.NoError(t, l.SaveSnapshot(1, []byte{1}), "older than the floor: pruned")
	require.NoError(t, l.SaveSnapshot(3, []byte{3}))
	require.NoError(t, l.SetStartOffset(3))
	for _, off := range []int64{5, 6, 7, 8, 9, 10} {
		require.NoError(t, l.SaveSnapshot(off, []byte{byte(off)}))
	}
	var kept []int64
	require.NoError(t, l.snapshotOffsets(func(off int64, _, _ []byte) { kept = append(kept, off) }))
	require.Equal(t, []int64{3, 8, 9, 10}, kept)

	off, data, found, err := l.LoadSnapshotAtMost(7)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, []byte{3}, data, "the newest at or below 7 that is left")
	require.EqualValues(t, 3, off)
	end, err := l.TruncateTo(4)
	require.NoError(t, err)
	off, _, found, err = l.LoadSnapshot()
	require.NoError(t, err)
	require.True(t, found, "truncated to %d, the start's snapshot is left", end)
	require.EqualValues(t, 3, off)
}

func TestPartitionLogFailedWriteLeavesLogUnchanged(t *testing.T) {
	m := NewMemFS()
	l := openTestLog(t, m, NewMemState(), smallSegments)
	defer l.Close()
	first := appendBatch(t, l, 1000, 1, 10, 1)
	m.SetFault(func(op Op, _ string) error {
		if op == OpWrite {
			return syscall.ENOSPC
		}
		return nil
	})
	h, b := testBatch(1, 1, 10, 1)
	err := l.Append(1000, h, b)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NotErrorIs(t, err, replica.ErrLogOffline)
	require.Equal(t, int64(1), l.EndOffset())
	m.SetFault(nil)
	require.NoError(t, l.Append(1000, h, b))
	got, err := l.Read(0, 1<<20, 2)
	require.NoError(t, err)
	require.Equal(t, append(append([]byte(nil), first...), b...), got)
}

func TestPartitionLogOfflineAfterFailedTruncate(t *testing.T) {
	m := NewMemFS()
	l := openTestLog(t, m, NewMemState(), smallSegments)
	defer l.Close()
	m.SetFault(func(op Op, _ string) error {
		if op == OpWrite || op == OpTruncate {
			return syscall.EIO
		}
		return nil
	})
	h, b := testBatch(0, 1, 10, 1)
	require.ErrorIs(t, l.Append(1000, h, b), replica.ErrLogOffline)
	m.SetFault(nil)
	require.ErrorIs(t, l.Append(1000, h, b), replica.ErrLogOffline)
	_, err := l.Read(0, 1, 1)
	require.ErrorIs(t, err, replica.ErrLogOffline)
	require.ErrorIs(t, l.Sync(), replica.ErrLogOffline)
}

func TestPartitionLogOfflineAfterFailedSync(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	appendBatch(t, l, 1000, 1, 10, 1)
	require.NoError(t, l.Sync())
	appendBatch(t, l, 1000, 1, 10, 1)
	m.SetFault(func(op Op, _ string) error {
		if op == OpSync {
			return syscall.EIO
		}
		return nil
	})
	require.ErrorIs(t, l.Sync(), replica.ErrLogOffline)
	m.SetFault(nil)
	require.ErrorIs(t, l.Sync(), replica.ErrLogOffline, "a failed fsync is never retried")
	h, b := testBatch(2, 1, 10, 1)
	require.ErrorIs(t, l.Append(1000, h, b), replica.ErrLogOffline)
	_, _, _, err := l.LoadSnapshot()
	require.ErrorIs(t, err, replica.ErrLogOffline)
	require.NoError(t, l.Close())

	// Recovery after a restart brings it back with at least the synced batch.
	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, int64(1), l.EndOffset())
}

// fsyncgate: after a failed fsync the kernel may mark the unwritten pages clean. A process
// restart (no power loss) must not recover them from the page cache, or they would be
// served, built upon, and lost with everything after them at the next power loss.
func TestPartitionLogFailedSyncThenRestartThenCrashKeepsSyncedData(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	appendBatch(t, l, 1000, 1, 10, 1)
	require.NoError(t, l.Sync())
	appendBatch(t, l, 1000, 1, 10, 1) // offset 1: its fsync fails
	m.SetFault(func(op Op, _ string) error {
		if op == OpSync {
			return syscall.EIO
		}
		return nil
	})
	require.ErrorIs(t, l.Sync(), replica.ErrLogOffline)
	m.SetFault(nil)
	require.NoError(t, l.Close())

	// Process restart: the page cache survives.
	l = openTestLog(t, m, st, smallSegments)
	require.Equal(t, int64(1), l.EndOffset(), "the batch whose fsync failed is gone")
	appendBatch(t, l, 1000, 3, 10, 1)
	require.NoError(t, l.Sync()) // offsets 1..3 acknowledged as durable
	require.NoError(t, l.Close())

	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, int64(4), l.EndOffset(), "everything synced after the restart survives")
	got, err := l.Read(0, 1<<20, 4)
	require.NoError(t, err)
	require.Len(t, splitBatches(t, got), 2)
}

// A Sync fsyncs segments oldest first; when a later one fails, the earlier ones it
// fsynced are durable. The log keeps them: it neither throws durable batches away on the
// restart, nor cuts a segment back in a truncation no fsync makes durable, which a power
// loss would undo (the log shrinking at the restart, then growing back after a crash).
func TestPartitionLogFailedSyncKeepsWhatEarlierFsyncsMadeDurable(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	for len(l.Segments()) < 2 {
		appendBatch(t, l, 1000, 1, 10, 1)
	}
	durable := l.Segments()[0].EndOffset // the first segment's fsync succeeds
	fsyncs := 0
	m.SetFault(func(op Op, p string) error {
		if op == OpSync && strings.HasSuffix(p, logSuffix) {
			if fsyncs++; fsyncs == 2 {
				return syscall.EIO // the second segment's fsync fails
			}
		}
		return nil
	})
	require.ErrorIs(t, l.Sync(), replica.ErrLogOffline)
	m.SetFault(nil)
	require.NoError(t, l.Close())

	l = openTestLog(t, m, st, smallSegments) // process restart
	require.Equal(t, durable, l.EndOffset(), "the durable segment is kept whole")
	require.NoError(t, l.Close())

	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, durable, l.EndOffset(), "a power loss changes nothing the restart saw")
}

func TestPartitionLogAppendRejectsWrongOffset(t *testing.T) {
	l := openTestLog(t, NewMemFS(), NewMemState(), smallSegments)
	defer l.Close()
	h, b := testBatch(5, 1, 10, 1)
	require.Error(t, l.Append(1000, h, b))
	h, b = testBatch(0, 1, 10, 1)
	require.Error(t, l.Append(1000, h, b[:len(b)-1]))
	require.Equal(t, int64(0), l.EndOffset())
}

func TestPartitionLogSyncRunsConcurrentlyWithAppend(t *testing.T) {
	m := NewMemFS()
	l := openTestLog(t, m, NewMemState(), smallSegments)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				require.NoError(t, l.Sync())
			}
		}
	}()
	for i := 0; i < 300; i++ {
		appendBatch(t, l, 1000, 1, 30, 1)
		_, err := l.Read(l.StartOffset(), 500, l.EndOffset())
		require.NoError(t, err)
		if i%50 == 49 {
			require.NoError(t, l.DeleteSegmentsBelow(l.EndOffset()-20))
		}
	}
	close(stop)
	wg.Wait()
	require.NoError(t, l.Sync())
	end := l.EndOffset()
	require.NoError(t, l.Close())
	m.Crash(zeroRand{})
	l = openTestLog(t, m, NewMemState(), smallSegments)
	defer l.Close()
	require.Equal(t, end, l.EndOffset(), "everything synced survives")
}

func TestPartitionLogReopenTrustsIndexFiles(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg := replica.SegmentConfig{SegmentBytes: 20000, IndexInterval: 300}
	l := openTestLog(t, m, st, cfg)
	for i := 0; i < 200; i++ {
		appendBatch(t, l, 1000, 1, 100, int64(i))
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	want := l.Segments()

	counts := countOps(m)
	l = openTestLog(t, m, st, cfg)
	defer l.Close()
	require.Equal(t, want, l.Segments())
	// Per segment: two index files plus two spot-check header reads; no scan.
	require.LessOrEqual(t, counts[OpRead], 4*len(want))
	for _, s := range l.segs {
		require.NotEmpty(t, s.idx.offs)
	}
	for o := int64(0); o < l.EndOffset(); o += 7 {
		got, err := l.Read(o, 1, l.EndOffset())
		require.NoError(t, err)
		require.Equal(t, o, splitBatches(t, got)[0].BaseOffset)
	}
}

func TestPartitionLogIgnoresStaleOrCorruptIndexFiles(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg := replica.SegmentConfig{SegmentBytes: 3000, IndexInterval: 300}
	l := openTestLog(t, m, st, cfg)
	for i := 0; i < 60; i++ {
		appendBatch(t, l, 1000, 1, 100, int64(i))
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	want := l.Segments()
	// Garble one index file, and swap another segment's index for a foreign one.
	idx := segmentFile("data/t-0", want[0].BaseOffset, indexSuffix)
	b, err := m.ReadFile(idx)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, m.WriteFile(idx, b))
	other, err := m.ReadFile(segmentFile("data/t-0", want[2].BaseOffset, indexSuffix))
	require.NoError(t, err)
	require.NoError(t, m.WriteFile(segmentFile("data/t-0", want[1].BaseOffset, indexSuffix), other))

	l = openTestLog(t, m, st, cfg)
	defer l.Close()
	require.Equal(t, want, l.Segments())
	for o := int64(0); o < l.EndOffset(); o++ {
		got, err := l.Read(o, 1, l.EndOffset())
		require.NoError(t, err)
		require.Equal(t, o, splitBatches(t, got)[0].BaseOffset)
	}
}

func TestRemovePartitionLog(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	for i := 0; i < 30; i++ {
		appendBatch(t, l, 1000, 2, 50, 1)
	}
	require.NoError(t, l.SetStartOffset(3))
	require.NoError(t, l.SaveSnapshot(5, []byte("x")))
	require.NoError(t, st.Set([]byte("log/t-1/start"), []byte("keep")))
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	require.NoError(t, RemovePartitionLog(m, "data/t-0", st, "log/t-0/"))
	_, err := m.Stat("data/t-0")
	require.Error(t, err)
	var keys []string
	require.NoError(t, st.Scan(nil, func(k, _ []byte) error {
		keys = append(keys, string(k))
		return nil
	}))
	require.Equal(t, []string{"log/t-1/start"}, keys)
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, int64(0), l.EndOffset())
	require.Equal(t, int64(0), l.StartOffset())
}

func TestPartitionLogOnOSFS(t *testing.T) {
	dir := t.TempDir() + "/p"
	st := NewMemState()
	l, err := OpenPartitionLog(OSFS{}, dir, st, "p/", smallSegments, 0, zap.NewNop())
	require.NoError(t, err)
	var all [][]byte
	for i := 0; i < 50; i++ {
		all = append(all, appendBatch(t, l, 1000, 2, 40, int64(i)))
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	l, err = OpenPartitionLog(OSFS{}, dir, st, "p/", smallSegments, 0, zap.NewNop())
	require.NoError(t, err)
	defer l.Close()
	require.Greater(t, len(l.Segments()), 2)
	for i, b := range all {
		got, err := l.Read(int64(2*i), 1, l.EndOffset())
		require.NoError(t, err)
		require.Equal(t, b, got)
	}
	names, err := OSFS{}.ReadDir(dir)
	require.NoError(t, err)
	require.Contains(t, names, "00000000000000000000.index")
	require.NoError(t, l.DeleteSegmentsBelow(l.EndOffset()))
	require.Len(t, l.Segments(), 1)
}

// A restart whose recovery fsync fails cannot know which recovered bytes are on disk: the
// log marks itself tainted and the next recovery rewrites every segment into a fresh file
// before serving, so what it serves survives a later power loss.
func TestPartitionLogRecoveryFsyncFailureRewritesOnNextOpen(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	appendBatch(t, l, 1000, 1, 10, 1)
	require.NoError(t, l.Sync())
	appendBatch(t, l, 1000, 1, 10, 1) // offset 1: never synced by this process
	require.NoError(t, l.Close())

	// Process restart during a disk-error spell: recovery's fsync fails.
	m.SetFault(func(op Op, _ string) error {
		if op == OpSync {
			return syscall.EIO
		}
		return nil
	})
	_, err := OpenPartitionLog(m, "data/t-0", st, "log/t-0/", smallSegments, 1000, zap.NewNop())
	require.ErrorIs(t, err, syscall.EIO)
	m.SetFault(nil)
	_, marked, err := st.Get([]byte("log/t-0/tainted"))
	require.NoError(t, err)
	require.True(t, marked, "the hazard is remembered durably")

	// The next restart serves offset 1 from the page cache: it must be rewritten first.
	l = openTestLog(t, m, st, smallSegments)
	require.Equal(t, int64(2), l.EndOffset())
	_, marked, err = st.Get([]byte("log/t-0/tainted"))
	require.NoError(t, err)
	require.False(t, marked, "a successful rewrite clears the mark")
	appendBatch(t, l, 1000, 2, 10, 1)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())

	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, int64(4), l.EndOffset(), "everything served after the rewrite survives")
	names, err := m.ReadDir("data/t-0")
	require.NoError(t, err)
	for _, n := range names {
		require.NotContains(t, n, rewriteSuffix, "no temporary copy is left behind")
	}
}
