package replica_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// The replica stamps its leader epoch into every batch, answers OffsetForLeaderEpoch
// from its cache, and stores the cache before the first batch of the epoch.
func TestReplicaStampsAndRecordsItsLeaderEpoch(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	r := newReplica(t, log, cfg(true))
	e, end := r.EndOffsetForEpoch(0)
	require.Equal(t, [2]int64{0, 0}, [2]int64{int64(e), end}, "a leader's epoch is known at once")
	_, found, err := log.LoadLeaderEpochs()
	require.NoError(t, err)
	require.False(t, found, "opening stores nothing")

	require.Zero(t, r.Append(1000, plain("a", "b")).Err)
	_, found, err = log.LoadLeaderEpochs()
	require.NoError(t, err)
	require.True(t, found, "stored before the first batch")
	require.NoError(t, log.ScanHeaders(0, func(h batch.Header) error {
		require.Equal(t, r.LeaderEpoch(), h.PartitionLeaderEpoch)
		return nil
	}))
	e, end = r.EndOffsetForEpoch(0)
	require.Equal(t, [2]int64{0, 2}, [2]int64{int64(e), end})
	e, end = r.EndOffsetForEpoch(1)
	require.Equal(t, [2]int64{-1, -1}, [2]int64{int64(e), end}, "newer than the latest")
}

// A cache that was lost (a state write in doubt dropped at a crash, or a data directory
// from before the cache) or that lacks the epoch of the log's last batch is rebuilt
// from the batch headers and stored again.
func TestReplicaRebuildsALostEpochCache(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	r := newReplica(t, log, cfg(true))
	require.Zero(t, r.Append(1000, plain("a")).Err)
	require.Zero(t, r.Append(1000, plain("b", "c")).Err)
	require.True(t, sync(t, r))
	// A batch of epoch 3 written behind the cache's back, as an older broker version or
	// a lost cache write would leave it.
	b := plain("d")
	batch.SetBaseOffset(b, log.EndOffset())
	batch.SetLeaderEpoch(b, 3)
	h, err := batch.Check(b)
	require.NoError(t, err)
	require.NoError(t, log.Append(1000, h, b))
	require.NoError(t, log.Sync())

	r = newReplica(t, log, cfg(true))
	require.Equal(t, []replica.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 3}},
		r.LeaderEpochs())
	e, end := r.EndOffsetForEpoch(2)
	require.Equal(t, [2]int64{0, 3}, [2]int64{int64(e), end}, "epoch 2 wrote nothing: 0 ended at 3")

	require.NoError(t, log.SaveLeaderEpochs(nil)) // lost altogether
	r = newReplica(t, log, cfg(true))
	require.Equal(t, []replica.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 3}},
		r.LeaderEpochs())
	_, found, err := log.LoadLeaderEpochs()
	require.NoError(t, err)
	require.True(t, found, "the rebuilt cache is stored")
}

// After a crash the cache forgets epochs whose batches the log lost, and after
// retention it forgets what lies below the start offset.
func TestReplicaEpochCacheFollowsCrashAndRetention(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	log.BatchesPerSegment = 1
	r := newReplica(t, log, cfg(true))
	for i := 0; i < 4; i++ {
		require.Zero(t, r.Append(1000, plain("x")).Err)
	}
	require.True(t, sync(t, r))
	require.Zero(t, r.Append(1000, plain("lost")).Err)
	log.Crash()
	r = newReplica(t, log, cfg(true))
	e, end := r.EndOffsetForEpoch(0)
	require.Equal(t, [2]int64{0, 4}, [2]int64{int64(e), end})
	require.NoError(t, log.DeleteSegmentsBelow(2))
	r = newReplica(t, log, cfg(true))
	require.Equal(t, []replica.EpochEntry{{Epoch: 0, StartOffset: 2}}, r.LeaderEpochs())
}
