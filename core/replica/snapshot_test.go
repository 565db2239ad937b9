package replica_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/probe"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// A restart recovers the producer table from the last snapshot plus the batches
// written after it: a retry of a batch appended after the snapshot is still answered
// as a duplicate, and the producer's next sequence is still accepted (the mutant
// replica/snapshot-only-recovery forgets those batches).
func TestRecoveryRescansBatchesAfterTheSnapshot(t *testing.T) {
	c := cfg(true)
	c.SnapshotEveryBatches = 3
	c.Probes = probe.NewSet()
	log := replicatest.NewMemLog(c.Segment)
	r := newReplica(t, log, c)
	for i := 0; i < 3; i++ {
		require.Zero(t, r.Append(1, idem(7, 0, int32(i), 1)).Err)
	}
	require.True(t, sync(t, r))
	require.Equal(t, uint64(1), hits(t, c.Probes, "replica/producer-snapshot-saved"))
	// A batch of the same producer and one of another, durable but fewer than the
	// interval: no new snapshot covers them.
	require.Zero(t, r.Append(1, idem(7, 0, 3, 2)).Err)
	require.Zero(t, r.Append(1, idem(8, 0, 0, 1)).Err)
	require.True(t, sync(t, r))
	require.Equal(t, uint64(1), hits(t, c.Probes, "replica/producer-snapshot-saved"))

	again, err := replica.New(tp, 2, log, c, zap.NewNop())
	require.NoError(t, err)
	require.Equal(t, uint64(1), hits(t, c.Probes, "replica/recover-from-snapshot"))
	dup := again.Append(2, idem(7, 0, 3, 2))
	require.Zero(t, dup.Err)
	require.True(t, dup.Duplicate, "a retry of the batch after the snapshot is a duplicate")
	require.Equal(t, int64(3), dup.BaseOffset)
	other := again.Append(2, idem(8, 0, 0, 1))
	require.Zero(t, other.Err)
	require.True(t, other.Duplicate, "a producer first seen after the snapshot is known")
	next := again.Append(2, idem(7, 0, 5, 1))
	require.Zero(t, next.Err)
	require.False(t, next.Duplicate)
	require.Equal(t, int64(6), next.BaseOffset)
}

// The interval defaults to 20,000 batches when not set.
func TestSnapshotIntervalDefault(t *testing.T) {
	require.Equal(t, 20_000, replica.DefaultSnapshotEveryBatches)
	c := cfg(true)
	c.Probes = probe.NewSet()
	r := newReplica(t, replicatest.NewMemLog(c.Segment), c)
	for i := 0; i < 50; i++ {
		require.Zero(t, r.Append(1, idem(7, 0, int32(i), 1)).Err)
	}
	require.True(t, sync(t, r))
	require.Zero(t, hits(t, c.Probes, "replica/producer-snapshot-saved"))
}

// The producers a replica lists (DescribeProducers) come back the same from a
// snapshot: the last batch's timestamp included. A snapshot written before the
// timestamp was kept lists it as -1 (unknown) until the producer writes again.
func TestActiveProducersSurviveSnapshots(t *testing.T) {
	c := cfg(true)
	c.SnapshotEveryBatches = 1
	c.Probes = probe.NewSet()
	log := replicatest.NewMemLog(c.Segment)
	r := newReplica(t, log, c)
	require.Zero(t, r.Append(1, idem(8, 2, 0, 3)).Err)
	require.Zero(t, r.Append(1, plain("not idempotent")).Err)
	require.Zero(t, r.Append(1, idem(7, 0, 0, 1)).Err)
	require.True(t, sync(t, r))
	want := []replica.ProducerState{{ID: 7, Epoch: 0, LastSequence: 0, LastTimestamp: 1000},
		{ID: 8, Epoch: 2, LastSequence: 2, LastTimestamp: 1000}}
	require.Equal(t, want, r.ActiveProducers())

	again, err := replica.New(tp, 2, log, c, zap.NewNop())
	require.NoError(t, err)
	require.Equal(t, uint64(1), hits(t, c.Probes, "replica/recover-from-snapshot"))
	require.Equal(t, want, again.ActiveProducers())

	old := `{"ids":[7],"entries":[{"e":0,"bs":[{"f":0,"l":0,"b":2,"o":2}]}]}`
	require.NoError(t, log.SaveSnapshot(log.EndOffset(), []byte(old)))
	again, err = replica.New(tp, 3, log, c, zap.NewNop())
	require.NoError(t, err)
	require.Equal(t, []replica.ProducerState{{ID: 7, LastSequence: 0, LastTimestamp: -1}},
		again.ActiveProducers())
	require.Zero(t, again.Append(1, idem(7, 0, 1, 1)).Err)
	require.Equal(t, []replica.ProducerState{{ID: 7, LastSequence: 1, LastTimestamp: 1000}},
		again.ActiveProducers())
}
