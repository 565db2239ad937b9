package replicatest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// appendN appends one batch of n records at the log end, stamped tsMs.
func appendN(t *testing.T, l *MemLog, n int, tsMs int64) batch.Header {
	t.Helper()
	kvs := make([]batch.KV, n)
	for i := range kvs {
		kvs[i] = batch.KV{Value: []byte{byte(i)}}
	}
	b := batch.Build(kvs, batch.NoProducer, tsMs)
	batch.SetBaseOffset(b, l.EndOffset())
	h, err := batch.Check(b)
	require.NoError(t, err)
	require.NoError(t, l.Append(tsMs, h, b))
	return h
}

func TestMemLogAppendRead(t *testing.T) {
	l := NewMemLog(replica.SegmentConfig{SegmentBytes: 1 << 20, SegmentMs: 1 << 40})
	h1 := appendN(t, l, 3, 10)
	h2 := appendN(t, l, 2, 20)
	require.EqualValues(t, 5, l.EndOffset())
	require.Error(t, l.Append(0, h1, make([]byte, h1.Size())), "wrong base offset")

	// The batch containing offset 1 comes first; maxBytes still lets the first through.
	got, err := l.Read(1, 1, 100)
	require.NoError(t, err)
	require.Len(t, got, h1.Size())
	got, err = l.Read(1, 1<<20, 100)
	require.NoError(t, err)
	require.Len(t, got, h1.Size()+h2.Size())
	got, err = l.Read(1, 1<<20, 4) // the second batch ends beyond upTo
	require.NoError(t, err)
	require.Len(t, got, h1.Size())
	_, err = l.Read(5, 100, 100)
	require.Error(t, err)

	off, ok, err := l.OffsetForTimestamp(15)
	require.NoError(t, err)
	require.True(t, ok)
	require.EqualValues(t, 3, off)
	_, ok, _ = l.OffsetForTimestamp(21)
	require.False(t, ok)
	ts, tsOff := l.MaxTimestamp()
	require.EqualValues(t, 20, ts)
	require.EqualValues(t, 3, tsOff)

	var bases []int64
	require.NoError(t, l.ScanHeaders(4, func(h batch.Header) error {
		bases = append(bases, h.BaseOffset)
		return nil
	}))
	require.Equal(t, []int64{3}, bases)
}

func TestMemLogSegmentsAndRetention(t *testing.T) {
	l := NewMemLog(replica.SegmentConfig{SegmentBytes: 1 << 20, SegmentMs: 1000})
	l.BatchesPerSegment = 2
	for i := range 5 {
		appendN(t, l, 1, int64(i))
	}
	segs := l.Segments()
	require.Len(t, segs, 3)
	require.Equal(t, []int64{0, 2, 4}, []int64{segs[0].BaseOffset, segs[1].BaseOffset,
		segs[2].BaseOffset})
	require.EqualValues(t, 2, segs[0].EndOffset)

	// Never deletes the active segment, raises the start offset.
	require.NoError(t, l.DeleteSegmentsBelow(100))
	require.Len(t, l.Segments(), 1)
	require.EqualValues(t, 4, l.StartOffset())

	require.Error(t, l.SetStartOffset(3), "backwards")
	require.Error(t, l.SetStartOffset(6), "past the end")
	require.NoError(t, l.SetStartOffset(5))
	require.EqualValues(t, 5, l.StartOffset())

	// segment.ms rolls an old segment.
	l2 := NewMemLog(replica.SegmentConfig{SegmentBytes: 1 << 20, SegmentMs: 1000})
	appendN(t, l2, 1, 0)
	appendN(t, l2, 1, 999)
	appendN(t, l2, 1, 1000)
	require.Len(t, l2.Segments(), 2)
}

func TestMemLogCrashKeepsSynced(t *testing.T) {
	l := NewMemLog(replica.SegmentConfig{SegmentBytes: 1 << 20, SegmentMs: 1 << 40})
	l.BatchesPerSegment = 1
	appendN(t, l, 2, 1)
	require.NoError(t, l.Sync())
	appendN(t, l, 2, 2)
	appendN(t, l, 2, 3)
	l.Crash()
	require.EqualValues(t, 2, l.EndOffset())
	require.Len(t, l.Batches(), 1)
	appendN(t, l, 1, 4) // the log accepts appends at the new end
	require.EqualValues(t, 3, l.EndOffset())
}

func TestMemLogSnapshotsAndClose(t *testing.T) {
	l := NewMemLog(replica.SegmentConfig{})
	_, _, found, err := l.LoadSnapshot()
	require.NoError(t, err)
	require.False(t, found)
	appendN(t, l, 3, 1)
	require.NoError(t, l.SaveSnapshot(3, []byte("a")))
	require.NoError(t, l.SaveSnapshot(9, []byte("b"))) // beyond the end: not loadable
	off, data, found, err := l.LoadSnapshot()
	require.NoError(t, err)
	require.True(t, found)
	require.EqualValues(t, 3, off)
	require.Equal(t, "a", string(data))

	require.NoError(t, l.Close())
	_, err = l.Read(0, 10, 10)
	require.ErrorIs(t, err, ErrClosed)
	l.Reopen(replica.SegmentConfig{SegmentBytes: 7})
	require.EqualValues(t, 7, l.Config().SegmentBytes)
	_, err = l.Read(0, 10, 10)
	require.NoError(t, err)
}

// TruncateTo follows the contract disk.PartitionLog keeps: whole batches go, the new
// end is the base of the batch holding the offset, segments past it go, snapshots past
// it go, and nothing below the start offset may be cut.
func TestMemLogTruncateTo(t *testing.T) {
	l := NewMemLog(replica.SegmentConfig{SegmentBytes: 1 << 20})
	l.BatchesPerSegment = 2
	for i := 0; i < 5; i++ {
		appendN(t, l, 2, int64(10*i)) // batches [0,2) [2,4) | [4,6) [6,8) | [8,10)
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.SaveSnapshot(8, []byte("s")))
	end, err := l.TruncateTo(5)
	require.NoError(t, err)
	require.EqualValues(t, 4, end)
	require.EqualValues(t, 4, l.EndOffset())
	require.Len(t, l.Segments(), 2, "the cut segment stays, empty, as the active one")
	_, _, found, err := l.LoadSnapshot()
	require.NoError(t, err)
	require.False(t, found)
	ts, _ := l.MaxTimestamp()
	require.EqualValues(t, 10, ts)
	appendN(t, l, 1, 99)
	require.EqualValues(t, 5, l.EndOffset())
	l.Crash()
	require.EqualValues(t, 4, l.EndOffset(), "the new batch was never synced")

	require.NoError(t, l.SetStartOffset(3))
	_, err = l.TruncateTo(2)
	require.Error(t, err, "below the start offset")
	_, err = l.TruncateTo(3)
	require.Error(t, err, "cuts the batch holding the start offset")
}
