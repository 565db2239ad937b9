package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/meta"
)

// A broker that restarts (a registration with a new incarnation) is unfenced only after
// every partition it led has another leader in a new leader epoch and it left every
// ISR others can hold: its log may have lost a tail its followers fetched, so it must
// not lead again in the epoch it led before (docs/replication.md, "Restarts"). The
// repairs are proposed a few at a time (MaxInFlight 2), so the heartbeat asking to be
// unfenced arrives while some are still to come.
func TestARestartedBrokerIsUnfencedOnlyOnceLeadershipMoved(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlight = 2
	h := newHarness(t, cfg, 1)
	h.settle()
	h.cluster(3, 0)
	require.Zero(t, h.createTopic("t", 9, 3).Err)
	before := map[int32]meta.PartitionState{}
	for p := range int32(9) {
		before[p] = h.state("t", p)
	}
	// Node 1's new process registered (committed, say, under the previous controller).
	const epoch = 100
	h.commitRecord(meta.Record{Kind: meta.KindBrokerRegistered, NodeID: 1,
		Incarnation: [16]byte{2}, BrokerEpoch: epoch, Host: "h", Port: 9001,
		BrokerState: meta.BrokerFenced})
	h.commitOne() // one repair committed, the others still to come
	r := h.beat(1, epoch)
	require.True(t, r.Fenced)
	for p := range int32(9) {
		s, old := h.state("t", p), before[p]
		if old.Leader == 1 {
			require.NotEqual(t, int32(1), s.Leader, "partition %d", p)
			require.Greater(t, s.LeaderEpoch, old.LeaderEpoch, "partition %d", p)
		}
		require.NotContains(t, s.ISR, int32(1), "partition %d", p)
	}
	b, _ := h.image.Broker(1)
	require.Equal(t, meta.BrokerFenced, b.State)
	r = h.beat(1, epoch)
	b, _ = h.image.Broker(1)
	require.Equal(t, meta.BrokerUnfenced, b.State, "moved off: unfenced by its heartbeat")
}
