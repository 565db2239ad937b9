package disk

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// rotLog writes n one-record batches (base offsets 0..n-1) over several certified
// segments, syncs and closes the log, and returns the positions of every batch.
func rotLog(t *testing.T, m *MemFS, st StateStore, n int) (replica.SegmentConfig, []int64) {
	t.Helper()
	cfg := replica.SegmentConfig{SegmentBytes: 2000, IndexInterval: 300}
	l := openTestLog(t, m, st, cfg)
	var pos []int64
	for i := 0; i < n; i++ {
		segs := l.Segments()
		p := segs[len(segs)-1].SizeBytes
		b := appendBatch(t, l, 1000, 1, 100, int64(i))
		if l.Segments()[len(l.Segments())-1].BaseOffset == int64(i) {
			p = 0 // this batch rolled a new segment
		}
		pos = append(pos, p)
		_ = b
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	return cfg, pos
}

// rotByte flips one bit of a CRC-covered byte of the batch at offset off.
func rotByte(t *testing.T, m *MemFS, l *PartitionLog, off int64, pos []int64) {
	t.Helper()
	seg := l.findSegment(off)
	require.True(t, m.Rot(segmentFile(l.dir, seg.base, logSuffix), pos[off]+40, 0x10))
}

func TestReadRefusesRottenBatchAndTakesTheLogOffline(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg, pos := rotLog(t, m, st, 60)
	l := openTestLog(t, m, st, cfg)
	defer l.Close()
	rotByte(t, m, l, 25, pos)

	// A read starting before the rotten batch must not serve it either.
	_, err := l.Read(24, 1<<20, l.EndOffset())
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, err, replica.ErrLogOffline)
	_, err = l.Read(40, 1<<20, l.EndOffset())
	require.ErrorIs(t, err, replica.ErrLogOffline, "offline until a restart")
	_, ok, err := st.Get(l.rotKey())
	require.NoError(t, err)
	require.True(t, ok, "the next recovery must be told to validate everything")
}

func TestRecoveryAfterRotStartsPastTheRottenBatch(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg, pos := rotLog(t, m, st, 60)
	l := openTestLog(t, m, st, cfg)
	rotByte(t, m, l, 25, pos)
	end := l.EndOffset()
	_, err := l.Read(25, 1, end)
	require.ErrorIs(t, err, ErrCorrupt)
	require.NoError(t, l.Close())

	// The rotten segment is certified by its index files: only the rot mark makes
	// recovery read it.
	l = openTestLog(t, m, st, cfg)
	require.Equal(t, int64(26), l.StartOffset(), "the log starts after the rotten batch")
	require.Equal(t, end, l.EndOffset(), "no offset is reused")
	for o := l.StartOffset(); o < l.EndOffset(); o++ {
		b, err := l.Read(o, 1, l.EndOffset())
		require.NoError(t, err)
		require.Equal(t, o, splitBatches(t, b)[0].BaseOffset)
	}
	_, ok, _ := st.Get(l.rotKey())
	require.False(t, ok, "the mark is cleared once recovery handled it")
	require.NoError(t, l.Close())
	// The start is durable: a later open without the mark keeps it.
	l = openTestLog(t, m, st, cfg)
	defer l.Close()
	require.Equal(t, int64(26), l.StartOffset())
	require.Equal(t, end, l.EndOffset())
}

func TestRecoveryFindsRotInTheUncertifiedTail(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg := replica.SegmentConfig{IndexInterval: 300}
	l := openTestLog(t, m, st, cfg)
	var pos []int64
	for i := 0; i < 10; i++ {
		pos = append(pos, l.Segments()[0].SizeBytes)
		appendBatch(t, l, 1000, 1, 100, int64(i))
	}
	require.NoError(t, l.Sync())
	rotByte(t, m, l, 4, pos)
	m.Crash(zeroRand{}) // no Close: no index certificate; recovery validates it all
	l = openTestLog(t, m, st, cfg)
	defer l.Close()
	require.Equal(t, int64(5), l.StartOffset())
	require.Equal(t, int64(10), l.EndOffset())

	// Rot in the last batch looks like a torn write: that is truncated, as before.
	rotByte(t, m, l, 9, pos)
	m.Crash(zeroRand{})
	l2 := openTestLog(t, m, st, cfg)
	defer l2.Close()
	require.Equal(t, int64(9), l2.EndOffset())
}

func TestRecoveryReadErrorWhileJudgingRotFailsTheOpen(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg := replica.SegmentConfig{IndexInterval: 1 << 20}
	l := openTestLog(t, m, st, cfg)
	var pos []int64
	for i := 0; i < 4; i++ {
		pos = append(pos, l.Segments()[0].SizeBytes)
		appendBatch(t, l, 1000, 1, 100, int64(i))
	}
	require.NoError(t, l.Sync())
	rotByte(t, m, l, 1, pos)
	m.Crash(zeroRand{})
	// Recovery reads the segment in one 64 KiB chunk; the second read is rotSkip's
	// look at the batch after the bad one.
	reads := 0
	m.SetFault(func(op Op, p string) error {
		if op == OpRead && p == segmentFile("data/t-0", 0, logSuffix) {
			if reads++; reads == 2 {
				return errors.New("EIO")
			}
		}
		return nil
	})
	_, err := OpenPartitionLog(m, "data/t-0", st, "log/t-0/", cfg, 1000, zap.NewNop())
	require.Error(t, err, "a read error must fail the open, not decide a truncation")
	m.SetFault(nil)
	l = openTestLog(t, m, st, cfg)
	defer l.Close()
	require.Equal(t, int64(2), l.StartOffset())
	require.Equal(t, int64(4), l.EndOffset())
}

func TestVerifyServedChecksTheChain(t *testing.T) {
	_, b0 := testBatch(0, 2, 10, 1)
	_, b2 := testBatch(2, 1, 10, 1)
	_, b5 := testBatch(5, 1, 10, 1)
	require.NoError(t, verifyServed(append(append([]byte(nil), b0...), b2...), 1, 3))
	require.True(t, isCorrupt(verifyServed(append(append([]byte(nil), b0...), b5...), 0, 6)))
	require.True(t, isCorrupt(verifyServed(b2, 0, 3)), "first batch must hold the offset")
	require.True(t, isCorrupt(verifyServed(b2, 2, 2)), "past the log end")
	bad := append([]byte(nil), b0...)
	bad[len(bad)-1] ^= 1
	require.True(t, isCorrupt(verifyServed(bad, 0, 2)))
	_, err := batch.Check(bad)
	require.Error(t, err)
}

func TestMemFSRotFlipsOnlyDurableBytes(t *testing.T) {
	m := NewMemFS()
	f, err := m.Create("f")
	require.NoError(t, err)
	_, _ = f.Write([]byte("abcd"))
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir(".")) // the entry too, or a crash undoes the file
	_, _ = f.Write([]byte("ef"))
	require.False(t, m.Rot("f", 4, 1), "unsynced bytes do not rot at rest")
	require.True(t, m.Rot("f", 1, 1))
	got, _ := m.ReadFile("f")
	require.Equal(t, "accdef", string(got))
	require.Equal(t, []DurableFile{{Path: "f", Durable: 4}}, m.DurableFiles("/"))
	m.Crash(zeroRand{})
	got, _ = m.ReadFile("f")
	require.Equal(t, "accd", string(got), "rot survives a crash")
}

func TestMemFSStaleWritesShowOldBlocksAfterACrash(t *testing.T) {
	m := NewMemFS()
	f, err := m.Create("f")
	require.NoError(t, err)
	_, _ = f.Write([]byte("abc"))
	require.NoError(t, f.Sync())
	require.NoError(t, m.SyncDir(".")) // the entry too, or a crash undoes the file
	_, _ = f.Write([]byte("defgh"))
	require.Equal(t, 1, m.StaleWrites(zeroRand{}, 1))
	m.Crash(allRand{})
	got, _ := m.ReadFile("f")
	require.Equal(t, "abcabcab", string(got), "the tail shows the file's first blocks")
}

// allRand keeps every torn byte and never garbles.
type allRand struct{}

func (allRand) Intn(n int) int { return n - 1 }
func (allRand) Int63() int64   { return 0 }

// A stale block at the tail is well framed and checksummed but belongs to other
// offsets: recovery must cut it (the disk/recovery-offsets-unchecked mutant does not).
func TestRecoveryTruncatesStaleBlocksAtTheTail(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg := replica.SegmentConfig{IndexInterval: 300}
	l := openTestLog(t, m, st, cfg)
	for i := 0; i < 3; i++ {
		appendBatch(t, l, 1000, 1, 100, int64(i))
	}
	require.NoError(t, l.Sync())
	for i := 0; i < 3; i++ {
		appendBatch(t, l, 1000, 1, 100, int64(i))
	}
	m.StaleWrites(zeroRand{}, 1)
	m.Crash(allRand{})
	l = openTestLog(t, m, st, cfg)
	defer l.Close()
	require.Equal(t, int64(0), l.StartOffset())
	require.Equal(t, int64(3), l.EndOffset())
}

// A flipped base offset (outside the CRC) must not make a read return nothing: the
// reader would stall on an empty answer forever.
func TestReadRefusesABatchWhoseBaseOffsetRotted(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg, pos := rotLog(t, m, st, 60)
	l := openTestLog(t, m, st, cfg)
	defer l.Close()
	seg := l.findSegment(25)
	require.True(t, m.Rot(segmentFile(l.dir, seg.base, logSuffix), pos[25]+1, 0x40))
	_, err := l.Read(25, 1<<20, 26)
	require.ErrorIs(t, err, ErrCorrupt)
}

// rotBaseOffset flips bit 4 of byte 6 of the base offset of the batch at offset off
// (off+4096 once rotten): the CRC does not cover it.
func rotBaseOffset(t *testing.T, m *MemFS, l *PartitionLog, off int64, pos []int64) {
	t.Helper()
	seg := l.findSegment(off)
	require.True(t, m.Rot(segmentFile(l.dir, seg.base, logSuffix), pos[off]+6, 0x10))
}

// Seed 1084: a rotten base offset (19 read as 4115) was answered by a lookup by time
// that walks headers only; the replica, finding it at or above the high-water mark,
// answered "no record" although later records reached the timestamp.
func TestTimeLookupRefusesRottenBaseOffset(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg, pos := rotLog(t, m, st, 60)
	l := openTestLog(t, m, st, cfg)
	defer l.Close()
	rotBaseOffset(t, m, l, 25, pos)

	off, found, err := l.OffsetForTimestamp(25)
	require.ErrorIs(t, err, ErrCorrupt, "answered %d (found %v)", off, found)
	require.ErrorIs(t, err, replica.ErrLogOffline)
	_, ok, err := st.Get(l.rotKey())
	require.NoError(t, err)
	require.True(t, ok, "the next recovery must be told to validate everything")
}

func TestScanHeadersRefusesRottenBaseOffset(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg, pos := rotLog(t, m, st, 60)
	l := openTestLog(t, m, st, cfg)
	defer l.Close()
	rotBaseOffset(t, m, l, 25, pos)

	var seen []int64
	err := l.ScanHeaders(20, func(h batch.Header) error {
		seen = append(seen, h.BaseOffset)
		return nil
	})
	require.ErrorIs(t, err, ErrCorrupt, "scanned %v", seen)
	require.ErrorIs(t, err, replica.ErrLogOffline)
}

// After recovery started the log past a rotten base offset, lookups by time and header
// scans from the start do not walk over the rotten header left in the segment.
func TestTimeLookupAfterRotRecovery(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg, pos := rotLog(t, m, st, 60)
	l := openTestLog(t, m, st, cfg)
	rotBaseOffset(t, m, l, 25, pos)
	_, _, err := l.OffsetForTimestamp(25)
	require.ErrorIs(t, err, ErrCorrupt)
	require.NoError(t, l.Close())

	l = openTestLog(t, m, st, cfg)
	defer l.Close()
	require.Equal(t, int64(26), l.StartOffset())
	for ts := int64(0); ts < 60; ts++ {
		off, found, err := l.OffsetForTimestamp(ts)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, max(ts, 26), off, "lookup of %d", ts)
	}
	n := 0
	require.NoError(t, l.ScanHeaders(0, func(h batch.Header) error {
		require.Equal(t, int64(26+n), h.BaseOffset)
		n++
		return nil
	}))
	require.Equal(t, 60-26, n)
}

// Seed 6 of --set nodes=3: recovery started the log past a rotten base offset in the
// active segment, which keeps the rotten bytes below the start. A follower's truncation
// later in that segment rebuilt the segment's max timestamp by scanning it from its
// first byte, met the rotten header, and took the log offline: the replica never
// followed again. The scan starts at the log start now.
func TestTruncateAfterRotRecoveryDoesNotWalkOverTheRottenBatch(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg, pos := rotLog(t, m, st, 60)
	l := openTestLog(t, m, st, cfg)
	bad := l.findSegment(59).base + 1
	require.Less(t, bad+2, int64(59), "the active segment holds batches after the rot")
	rotBaseOffset(t, m, l, bad, pos)
	_, _, err := l.OffsetForTimestamp(bad)
	require.ErrorIs(t, err, ErrCorrupt)
	require.NoError(t, l.Close())

	// No index entry before the rot but the one recovery adds after it (Kafka's
	// index.interval.bytes is 4096: a small active segment has none).
	cfg.IndexInterval = 1 << 20
	l = openTestLog(t, m, st, cfg)
	require.Equal(t, bad+1, l.StartOffset())
	end, err := l.TruncateTo(bad + 2)
	require.NoError(t, err)
	require.Equal(t, bad+2, end)
	off, found, err := l.OffsetForTimestamp(0)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, bad+1, off)
	appendBatch(t, l, 1000, 1, 100, bad+2)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())

	l = openTestLog(t, m, st, cfg)
	defer l.Close()
	require.Equal(t, bad+1, l.StartOffset())
	require.Equal(t, bad+3, l.EndOffset())
	for o := l.StartOffset(); o < l.EndOffset(); o++ {
		b, err := l.Read(o, 1, l.EndOffset())
		require.NoError(t, err)
		require.Equal(t, o, splitBatches(t, b)[0].BaseOffset)
	}
}

// A rotten batch above the log start that a truncation meets takes the log offline as
// a corrupt read does: ErrCorrupt, and the rot mark for the next recovery (the index
// rebuild after the cut reports it so too).
func TestTruncateMeetingRotMarksTheLogForRecovery(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg := replica.SegmentConfig{SegmentBytes: 1 << 20, IndexInterval: 1 << 20}
	l := openTestLog(t, m, st, cfg)
	defer l.Close()
	var pos []int64
	for i := range int64(10) {
		pos = append(pos, l.Segments()[0].SizeBytes)
		appendBatch(t, l, 1000, 1, 100, i)
	}
	require.NoError(t, l.Sync())
	rotBaseOffset(t, m, l, 3, pos)
	_, err := l.TruncateTo(6)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, err, replica.ErrLogOffline)
	_, ok, err := st.Get(l.rotKey())
	require.NoError(t, err)
	require.True(t, ok, "the next recovery must be told to validate everything")
}
