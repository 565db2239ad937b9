package disk

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/replica"
)

// Each storage path that changes a directory makes the change durable before it relies
// on it (docs/storage.md, "Durability rules"): MemFS undoes at a crash every entry no
// directory fsync covered, so each test fails if its path forgets one.

// A segment created by a roll holds acknowledged bytes only after a Sync, which fsyncs
// the directory first: a crash keeps the new segment.
func TestRolledSegmentSurvivesACrashOnceSynced(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	var want [][]byte
	for len(l.Segments()) < 3 {
		want = append(want, appendBatch(t, l, 1000, 2, 50, 1))
	}
	require.NoError(t, l.Sync())
	end := l.EndOffset()
	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, end, l.EndOffset(), "a synced segment's entry was lost")
	require.Equal(t, want, readAll(t, l))
}

// Segments deleted by retention stay deleted after a crash: the log start does not go
// back.
func TestDeletedSegmentsStayDeletedAfterACrash(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	for len(l.Segments()) < 4 {
		appendBatch(t, l, 1000, 2, 50, 1)
	}
	require.NoError(t, l.Sync())
	cut := l.Segments()[1].EndOffset
	require.NoError(t, l.DeleteSegmentsBelow(cut))
	start := l.StartOffset()
	require.Equal(t, cut, start)
	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, start, l.StartOffset(), "a crash brought deleted segments back")
}

// A removed partition log stays removed after a crash: a topic created later under the
// same name starts empty, not with the deleted topic's records.
func TestRemovedLogStaysRemovedAfterACrash(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	require.NoError(t, m.MkdirAll("data"))
	l := openTestLog(t, m, st, smallSegments)
	for len(l.Segments()) < 2 {
		appendBatch(t, l, 1000, 2, 50, 1)
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	require.NoError(t, RemovePartitionLog(m, "data/t-0", st, "log/t-0/"))
	m.Crash(zeroRand{})
	_, err := m.ReadDir("data/t-0")
	require.ErrorIs(t, err, fs.ErrNotExist, "a crash brought a removed log back")
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Zero(t, l.EndOffset())
}

// A run killed before its first Sync leaves a segment whose entry is not durable in a
// directory that exists; the next open recovers the bytes and treats them as durable,
// so it must make the entry durable too: a crash after the open keeps them.
func TestRecoveredSegmentOfAnUnsyncedDirectorySurvivesACrash(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	require.NoError(t, m.MkdirAll("data"))
	l := openTestLog(t, m, st, replica.SegmentConfig{})
	require.True(t, l.entryPending)
	b := appendBatch(t, l, 1000, 3, 10, 1)
	require.NoError(t, l.Close()) // killed: no Sync ran; the page cache keeps the bytes
	require.NoError(t, m.SyncEntry("data/t-0"), "some other fsync made the directory durable")
	require.NoError(t, m.Remove("data/t-0/00000000000000000000.log"))
	require.NoError(t, m.SyncDir("data/t-0"))
	f, err := m.Create("data/t-0/00000000000000000000.log") // entry not durable
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)

	l = openTestLog(t, m, st, replica.SegmentConfig{})
	require.EqualValues(t, 3, l.EndOffset(), "recovery keeps the bytes")
	require.NoError(t, l.Close())
	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, replica.SegmentConfig{})
	defer l.Close()
	require.EqualValues(t, 3, l.EndOffset(), "what recovery kept was lost by a crash")
}

// StartSync issues the fsyncs when it begins and finishes when they land: on a MemFS
// flight, bytes appended in between are not durable, and the index files certifying a
// sealed segment are written only by the finish, after the landing.
func TestStartSyncCoversOnlyWhatWasAppendedBeforeIt(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	for len(l.Segments()) < 2 {
		appendBatch(t, l, 1000, 2, 50, 1)
	}
	covered := l.EndOffset()
	var finish func() error
	fl := m.Fly(func() { finish = l.StartSync() })
	names, err := m.ReadDir("data/t-0")
	require.NoError(t, err)
	require.Len(t, names, 2, "no index file before the fsyncs landed")
	appendBatch(t, l, 1000, 2, 50, 1) // while the fsyncs are in flight
	fl.Land()
	require.NoError(t, finish())
	names, err = m.ReadDir("data/t-0")
	require.NoError(t, err)
	require.Len(t, names, 4, "the sealed segment's index files")
	require.NoError(t, l.Close())

	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, covered, l.EndOffset())
}
