package replica_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// leaderBatch is a batch as a leader stored it: at base, stamped with epoch.
func leaderBatch(t *testing.T, b []byte, base int64, epoch int32) []byte {
	t.Helper()
	batch.SetBaseOffset(b, base)
	batch.SetLeaderEpoch(b, epoch)
	_, err := batch.Check(b)
	require.NoError(t, err)
	return b
}

// A follower appends its leader's batches unchanged, learns new epochs from them,
// refuses a gap, an older epoch and a corrupt batch (keeping what came before), and
// exposes only what the leader's high-water mark and its own fsyncs allow.
func TestFollowerAppendsTheLeadersBatches(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	f := newReplica(t, log, cfg(true))
	_, err := f.AppendReplicated(1000, leaderBatch(t, plain("a"), 0, 0))
	require.ErrorIs(t, err, replica.ErrNotFollower, "a leader takes produces, not replication")
	f.BecomeFollower(0)
	require.Equal(t, kerr.NotLeaderForPartition.Code, f.Append(1000, plain("p")).Err)
	b0 := leaderBatch(t, plain("a", "b"), 0, 0)
	b1 := leaderBatch(t, plain("c"), 2, 4)
	n, err := f.AppendReplicated(1000, append(append([]byte{}, b0...), b1...))
	require.NoError(t, err)
	require.Equal(t, len(b0)+len(b1), n)
	require.Equal(t, [][]byte{b0, b1}, log.Batches(), "stored byte for byte")
	require.Equal(t, []replica.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 4, StartOffset: 2}},
		f.LeaderEpochs())

	gap := leaderBatch(t, plain("x"), 9, 4)
	_, err = f.AppendReplicated(1000, gap)
	require.ErrorIs(t, err, replica.ErrNotContiguous)
	old := leaderBatch(t, plain("y"), 3, 2)
	_, err = f.AppendReplicated(1000, old)
	require.ErrorIs(t, err, replica.ErrEpochWentBack)
	good := leaderBatch(t, plain("z"), 3, 4)
	bad := leaderBatch(t, plain("w"), 4, 4)
	bad[len(bad)-1] ^= 1
	n, err = f.AppendReplicated(1000, append(append([]byte{}, good...), bad...))
	require.Error(t, err, "the corrupt second batch is refused")
	require.Equal(t, len(good), n, "the batch before it stays")
	require.EqualValues(t, 4, f.EndOffset())

	require.False(t, f.SetLeaderHighWatermark(3), "nothing is durable yet")
	require.False(t, sync(t, f), "a follower's fsync does not move its high-water mark")
	require.EqualValues(t, 0, f.HighWatermark(), "a sync alone does not expose a follower's data")
	require.True(t, f.SetLeaderHighWatermark(2))
	require.EqualValues(t, 2, f.HighWatermark())
	require.True(t, f.SetLeaderHighWatermark(99))
	require.EqualValues(t, 4, f.HighWatermark(), "bounded by what the follower holds")
	require.False(t, f.SetLeaderHighWatermark(1), "never goes back")
}

// A follower meeting a new leader cuts its divergent tail: the log, the epoch cache
// and the producer table forget the cut batches, so the same producer sequence is
// taken again, not answered as a duplicate.
func TestFollowerTruncateForgetsTheCutTail(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	f := newReplica(t, log, cfg(true))
	f.BecomeFollower(1)
	_, err := f.AppendReplicated(1000, leaderBatch(t, idem(7, 0, 0, 2), 0, 1))
	require.NoError(t, err)
	_, err = f.AppendReplicated(1000, leaderBatch(t, idem(7, 0, 2, 2), 2, 3))
	require.NoError(t, err)
	require.False(t, sync(t, f), "a follower's fsync does not move its high-water mark")
	require.True(t, f.SetLeaderHighWatermark(2))

	end, err := f.TruncateTo(3) // inside the epoch-3 batch [2, 4)
	require.NoError(t, err)
	require.EqualValues(t, 2, end)
	require.EqualValues(t, 2, f.EndOffset())
	require.Equal(t, []replica.EpochEntry{{Epoch: 1, StartOffset: 0}}, f.LeaderEpochs())
	e, off := f.EndOffsetForEpoch(1)
	require.Equal(t, [2]int64{1, 2}, [2]int64{int64(e), off})

	// As the new leader, it takes the producer's retry of sequence 2 as new.
	require.ErrorIs(t, f.BecomeLeader(0), replica.ErrEpochWentBack)
	require.NoError(t, f.BecomeLeader(5))
	res := f.Append(1000, idem(7, 0, 2, 2))
	require.Zero(t, res.Err)
	require.False(t, res.Duplicate, "the cut batch is not remembered")
	require.EqualValues(t, 2, res.BaseOffset)
}

// A follower behind its leader's log start empties its log there: start, end and
// high-water mark at the new start, no epochs, and it appends the leader's batches from
// there. A leader, or a negative offset, is refused.
func TestFollowerResetToTheLeadersLogStart(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	f := newReplica(t, log, cfg(true))
	require.ErrorIs(t, f.ResetTo(10, 1000), replica.ErrNotFollower)
	f.BecomeFollower(3)
	_, err := f.AppendReplicated(1000, leaderBatch(t, plain("a", "b"), 0, 3))
	require.NoError(t, err)
	sync(t, f)
	f.SetLeaderHighWatermark(2)
	require.Error(t, f.ResetTo(-1, 1000), "a negative offset")

	require.NoError(t, f.ResetTo(10, 1000))
	require.EqualValues(t, 10, f.StartOffset())
	require.EqualValues(t, 10, f.EndOffset())
	require.EqualValues(t, 10, f.HighWatermark())
	require.Empty(t, f.LeaderEpochs())
	off, last, ok := f.FetchPosition()
	require.True(t, ok)
	require.Equal(t, []int64{10, -1}, []int64{off, int64(last)})
	b := leaderBatch(t, plain("k"), 10, 5)
	_, err = f.AppendReplicated(1000, b)
	require.NoError(t, err)
	require.Equal(t, [][]byte{b}, log.Batches())
	require.Equal(t, []replica.EpochEntry{{Epoch: 5, StartOffset: 10}}, f.LeaderEpochs())
}

// A follower whose log diverges from its leader's below its own log start empties its
// log at the divergence point, below its old start and end: no epochs are left (kept,
// the leader would answer every fetch with the same divergence), the high-water mark
// is the new start, and it appends the leader's batches from there.
func TestFollowerResetBelowItsLogStart(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	f := newReplica(t, log, cfg(true))
	f.BecomeFollower(3)
	_, err := f.AppendReplicated(1000, leaderBatch(t, plain("a", "b"), 0, 3))
	require.NoError(t, err)
	_, err = f.AppendReplicated(1000, leaderBatch(t, plain("c", "d"), 2, 4))
	require.NoError(t, err)
	sync(t, f)
	f.SetLeaderHighWatermark(4)
	_, code := f.DeleteRecordsBefore(3)
	require.Zero(t, code)
	require.EqualValues(t, 3, f.StartOffset())

	require.NoError(t, f.ResetTo(2, 1000))
	require.EqualValues(t, 2, f.StartOffset())
	require.EqualValues(t, 2, f.EndOffset())
	require.EqualValues(t, 2, f.HighWatermark())
	require.Empty(t, f.LeaderEpochs())
	off, last, ok := f.FetchPosition()
	require.True(t, ok)
	require.Equal(t, []int64{2, -1}, []int64{off, int64(last)})
	b := leaderBatch(t, plain("x"), 2, 5)
	_, err = f.AppendReplicated(1000, b)
	require.NoError(t, err)
	require.Equal(t, [][]byte{b}, log.Batches())
}

// thinned is b as the cleaner leaves a batch it removed records from: the same base
// offset and lastOffsetDelta, fewer records (here: count says so; the CRC is redone).
func thinned(b []byte, lastDelta, count int32) []byte {
	binary.BigEndian.PutUint32(b[23:], uint32(lastDelta))
	binary.BigEndian.PutUint32(b[57:], uint32(count))
	binary.BigEndian.PutUint32(b[17:], batch.ComputeCRC(b))
	return b
}

// A compacted leader's log holds batches the cleaner thinned or emptied (record count
// below lastOffsetDelta+1): a follower appends them as they are, as Kafka's does, where
// a produce would be refused. It used to refuse them, and the follower of a compacted
// partition never caught up (the simulator's compaction workload with nodes=3).
func TestFollowerAppendsCompactedBatches(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	f := newReplica(t, log, cfg(true))
	f.BecomeFollower(0)
	thin := thinned(plain("a"), 2, 1) // offsets 0..2, one record left
	batch.SetLeaderEpoch(thin, 0)
	_, err := batch.Check(thin)
	require.ErrorIs(t, err, batch.ErrBadRecordCount, "a produce would be refused")
	empty := thinned(plain("b"), 1, 0) // offsets 3..4, no record left
	batch.SetBaseOffset(empty, 3)
	batch.SetLeaderEpoch(empty, 0)
	n, err := f.AppendReplicated(1000, append(append([]byte{}, thin...), empty...))
	require.NoError(t, err)
	require.Equal(t, len(thin)+len(empty), n)
	require.EqualValues(t, 5, f.EndOffset())
	over := thinned(plain("c"), 0, 2) // more records than offsets: still refused
	batch.SetBaseOffset(over, 5)
	_, err = f.AppendReplicated(1000, over)
	require.ErrorIs(t, err, batch.ErrBadRecordCount)
}

// The leader's cleaner merges a run of emptied batches into one filler batch, which may
// begin below the follower's log end (the follower holds the original batches): the
// follower appends the filler's part from its log end on.
func TestFollowerTakesTheRestOfALeadersFiller(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	f := newReplica(t, log, cfg(true))
	f.BecomeFollower(0)
	_, err := f.AppendReplicated(1000, leaderBatch(t, plain("a", "b"), 0, 0))
	require.NoError(t, err)
	filler := thinned(plain("x"), 4, 0) // offsets 0..4, emptied
	batch.SetLeaderEpoch(filler, 0)
	n, err := f.AppendReplicated(1000, filler)
	require.NoError(t, err)
	require.Equal(t, len(filler), n)
	require.EqualValues(t, 5, f.EndOffset())
	h, err := batch.CheckStored(log.Batches()[1])
	require.NoError(t, err)
	require.EqualValues(t, 2, h.BaseOffset)
	require.EqualValues(t, 5, h.NextOffset())
}
