package disk

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/replica"
)

var errResetTest = errors.New("test: injected failure")

// resetTestLog is a log of three segments, synced, with a producer snapshot at its end.
func resetTestLog(t *testing.T) (*MemFS, StateStore, *PartitionLog, replica.SegmentConfig) {
	m, st := NewMemFS(), NewMemState()
	cfg := replica.SegmentConfig{SegmentBytes: 600, IndexInterval: 100}
	l := openTestLog(t, m, st, cfg)
	for len(l.Segments()) < 3 {
		appendBatch(t, l, 1000, 2, 50, 100)
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.SaveSnapshot(l.EndOffset(), []byte("old producers")))
	return m, st, l, cfg
}

// requireEmptyAt checks that l is empty at offset, without snapshots, and takes a
// batch there.
func requireEmptyAt(t *testing.T, l *PartitionLog, offset int64) {
	t.Helper()
	require.Equal(t, offset, l.StartOffset())
	require.Equal(t, offset, l.EndOffset())
	require.Len(t, l.Segments(), 1)
	require.Empty(t, readAll(t, l))
	_, _, found, err := l.LoadSnapshot()
	require.NoError(t, err)
	require.False(t, found, "the snapshots of the old records are gone")
}

// ResetTo empties the log and starts it over past its end (a follower behind its
// leader's log start): old records and snapshots are gone, the log takes batches from
// the new start, and all of it survives a crash. A negative offset is refused.
func TestResetToStartsTheLogOverPastItsEnd(t *testing.T) {
	m, st, l, cfg := resetTestLog(t)
	end := l.EndOffset()
	require.ErrorIs(t, l.ResetTo(-1, 2000), ErrOutOfRange)
	require.NoError(t, l.ResetTo(end+10, 2000))
	requireEmptyAt(t, l, end+10)
	b := appendBatch(t, l, 2000, 2, 50, 200)
	require.NoError(t, l.Sync())
	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, cfg)
	defer l.Close()
	require.Equal(t, end+10, l.StartOffset())
	require.Equal(t, [][]byte{b}, readAll(t, l))
}

// A crash part way through ResetTo leaves the reset log once the new start offset is
// stored: a removal that fails (the old segments stay) or a directory fsync that fails
// (a crash may bring any of them back, and drop the new segment) takes the log offline,
// and recovery empties it at the stored start.
func TestResetToCrashPartWay(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(op Op, path string) error
	}{
		{"remove fails", func(op Op, _ string) error {
			if op == OpRemove {
				return errResetTest
			}
			return nil
		}},
		{"directory fsync fails", func(op Op, p string) error {
			if op == OpSync && p == "data/t-0" {
				return errResetTest
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, st, l, cfg := resetTestLog(t)
			end := l.EndOffset()
			m.SetFault(tc.fault)
			require.ErrorIs(t, l.ResetTo(end+10, 2000), replica.ErrLogOffline)
			m.SetFault(nil)
			m.Crash(zeroRand{})
			l = openTestLog(t, m, st, cfg)
			defer l.Close()
			requireEmptyAt(t, l, end+10)
			b := appendBatch(t, l, 2000, 2, 50, 200)
			require.Equal(t, [][]byte{b}, readAll(t, l))
		})
	}
}

// A follower whose log diverges from its leader's below its own log start empties it
// at the divergence point, below the old start: the result survives a crash, and a
// crash part way (a removal or the directory fsync failing) never shows a record below
// the old start (DeleteRecords deleted it): recovery finds the old log under its old
// start, or an empty log at the old start or at the new offset.
func TestResetToBelowTheLogStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(op Op, path string) error
	}{
		{"no fault", nil},
		{"remove fails", func(op Op, _ string) error {
			if op == OpRemove {
				return errResetTest
			}
			return nil
		}},
		{"directory fsync fails", func(op Op, p string) error {
			if op == OpSync && p == "data/t-0" {
				return errResetTest
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, st, l, cfg := resetTestLog(t)
			end := l.EndOffset()
			oldStart := l.Segments()[1].BaseOffset + 1
			require.NoError(t, l.SetStartOffset(oldStart))
			require.NoError(t, l.Sync())
			at := oldStart - 2
			m.SetFault(tc.fault)
			err := l.ResetTo(at, 2000)
			m.SetFault(nil)
			if tc.fault == nil {
				require.NoError(t, err)
				requireEmptyAt(t, l, at)
				b := appendBatch(t, l, 2000, 2, 50, 200)
				require.NoError(t, l.Sync())
				m.Crash(zeroRand{})
				l = openTestLog(t, m, st, cfg)
				defer l.Close()
				require.Equal(t, at, l.StartOffset())
				require.Equal(t, [][]byte{b}, readAll(t, l))
				return
			}
			require.ErrorIs(t, err, replica.ErrLogOffline)
			m.Crash(zeroRand{})
			l = openTestLog(t, m, st, cfg)
			defer l.Close()
			switch l.StartOffset() {
			case at:
				requireEmptyAt(t, l, at)
			case oldStart:
				require.LessOrEqual(t, l.EndOffset(), end)
			default:
				t.Fatalf("recovered start %d: neither the old start %d nor the reset's %d",
					l.StartOffset(), oldStart, at)
			}
		})
	}
}
