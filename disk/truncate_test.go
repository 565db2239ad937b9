package disk

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/replica"
)

// A follower cuts a divergent tail and appends its new leader's batches at the same
// offsets: after a crash the log holds the new batches (once synced) and never a cut one,
// and index files, timestamps and snapshots describe only what is left.
func TestTruncateToThenAppendSurvivesACrash(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	cfg := replica.SegmentConfig{SegmentBytes: 600, IndexInterval: 100}
	l := openTestLog(t, m, st, cfg)
	var written [][]byte
	for len(l.Segments()) < 4 {
		written = append(written, appendBatch(t, l, 1000, 2, 50, int64(100+len(written))))
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.SaveSnapshot(l.EndOffset(), []byte("past the cut")))
	segs := l.Segments()
	cut := segs[1].BaseOffset + 1 // inside the first batch of segment 1
	end, err := l.TruncateTo(cut)
	require.NoError(t, err)
	require.Equal(t, segs[1].BaseOffset, end, "the batch holding the offset goes whole")
	require.Len(t, l.Segments(), 2)
	_, _, found, err := l.LoadSnapshot()
	require.NoError(t, err)
	require.False(t, found, "the snapshot past the cut is gone")
	kept := 0
	for kept < len(written) && kept*2 < int(end) {
		kept++
	}
	ts, off := l.MaxTimestamp()
	require.Equal(t, int64(100+kept-1), ts, "max timestamp of what is left")
	require.Equal(t, end-2, off)

	var fresh [][]byte
	for i := 0; i < 3; i++ {
		fresh = append(fresh, appendBatch(t, l, 1000, 2, 50, int64(5+i)))
	}
	require.NoError(t, l.Sync())
	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, cfg)
	defer l.Close()
	require.Equal(t, append(append([][]byte{}, written[:kept]...), fresh...), readAll(t, l))
}

// Truncation refuses to go below the start offset, or to cut the batch holding it.
func TestTruncateToBelowStartIsRefused(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	defer l.Close()
	for i := 0; i < 4; i++ {
		appendBatch(t, l, 1000, 2, 50, 1)
	}
	require.NoError(t, l.SetStartOffset(3)) // inside the batch [2, 4)
	_, err := l.TruncateTo(1)
	require.ErrorIs(t, err, ErrOutOfRange)
	_, err = l.TruncateTo(3)
	require.ErrorIs(t, err, ErrOutOfRange, "cutting [2, 4) would leave the end below the start")
	end, err := l.TruncateTo(4)
	require.NoError(t, err)
	require.Equal(t, int64(4), end)
	require.Equal(t, int64(3), l.StartOffset())
}

// A group commit in flight when a truncation cuts the segment it is fsyncing must not
// claim the batches appended in place of the cut ones: the next Sync fsyncs them, and
// they survive a crash.
func TestSyncInFlightAcrossTruncateClaimsOnlyWhatItCovered(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	g := newGateFS(m)
	g.after = true // the fsync covered the batches about to be cut, and no more
	l := openTestLog(t, NewFileCache(g, 64), st, smallSegments)
	var written [][]byte
	for i := 0; i < 6; i++ {
		written = append(written, appendBatch(t, l, 1000, 2, 50, 1))
	}
	res := syncHeld(t, g, l) // planned the whole active segment, held in its fsync
	end, err := l.TruncateTo(6)
	require.NoError(t, err)
	require.Equal(t, int64(6), end)
	fresh := appendBatch(t, l, 1000, 2, 50, 2) // as long as a cut one: within the old size
	close(g.release)
	require.NoError(t, <-res)
	require.NoError(t, l.Sync())
	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, append(append([][]byte{}, written[:3]...), fresh), readAll(t, l))
}
