package replica_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/probe"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// hits returns how often the named probe was hit in s.
func hits(t *testing.T, s *probe.Set, name string) uint64 {
	t.Helper()
	for id, n := range probe.Names() {
		if n == name {
			return s.Count(probe.ID(id))
		}
	}
	t.Fatalf("no probe %q", name)
	return 0
}

// The simulator never reaches these branches (docs/simulation.md, "Never hit"): a
// partition with more producers than its table holds, and producer snapshots.
func TestProducerTableEvictsTheLongestIdle(t *testing.T) {
	c := cfg(false)
	c.Probes = probe.NewSet()
	r := newReplica(t, replicatest.NewMemLog(c.Segment), c)
	const n = 10_001 // one more than the table holds
	for pid := int64(0); pid < n; pid++ {
		require.Zero(t, r.Append(1, idem(pid, 0, 0, 1)).Err)
	}
	require.Equal(t, uint64(1), hits(t, c.Probes, "replica/producer-evicted"))
	// Producer 0 wrote longest ago: forgotten, its next batch is refused as Kafka
	// refuses an unknown producer's; the newest one goes on.
	require.Equal(t, kerr.UnknownProducerID.Code, r.Append(2, idem(0, 0, 1, 1)).Err)
	require.Zero(t, r.Append(2, idem(n-1, 0, 1, 1)).Err)
}

func TestProducerSnapshotIsSavedAndRecovered(t *testing.T) {
	c := cfg(true)
	c.Probes = probe.NewSet()
	log := replicatest.NewMemLog(c.Segment)
	r := newReplica(t, log, c)
	const batches = 20_000 // snapshotEveryBatches
	for i := 0; i < batches; i++ {
		require.Zero(t, r.Append(1, idem(7, 0, int32(i), 1)).Err)
	}
	require.True(t, sync(t, r))
	require.Equal(t, uint64(1), hits(t, c.Probes, "replica/producer-snapshot-saved"))

	again, err := replica.New(tp, 2, log, c, zap.NewNop())
	require.NoError(t, err)
	require.Equal(t, uint64(1), hits(t, c.Probes, "replica/recover-from-snapshot"))
	// The recovered table knows the producer's last sequence: a retry of the last
	// batch is a duplicate, the next sequence is accepted.
	dup := again.Append(2, idem(7, 0, batches-1, 1))
	require.Zero(t, dup.Err)
	require.True(t, dup.Duplicate)
	require.Zero(t, again.Append(2, idem(7, 0, batches, 1)).Err)
}
