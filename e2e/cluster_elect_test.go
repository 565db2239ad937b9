package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kadm.ElectLeaders (what kafka-leader-election.sh --election-type preferred sends)
// moves leadership back to each partition's preferred replica after a restart left it
// elsewhere; an unclean one (--election-type unclean) leaves partitions that have an
// eligible leader alone (core/controller's TestAnUncleanElectLeadersBringsBackAPartitionWithoutISR
// covers the partition that has none).
func TestClusterElectsPreferredLeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three node processes")
	}
	c := startCluster(t, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 3, 3, nil, "elect")
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	c.awaitHealthy("elect", 3, 30*time.Second)

	// Node 1 restarts: the partitions it led move to another ISR member and stay there.
	c.kill(c.node(1))
	c.await(30*time.Second, "node 1 leads nothing", func() bool {
		for p := int32(0); p < 3; p++ {
			if l := c.partitionLeader("elect", p); l == 1 || l < 0 {
				return false
			}
		}
		return true
	})
	c.restart(c.node(1))
	c.awaitHealthy("elect", 3, 60*time.Second)
	preferred := func() (moved int) {
		md, err := adm.Metadata(ctx, "elect")
		require.NoError(t, err)
		for _, p := range md.Topics["elect"].Partitions {
			if p.Leader != p.Replicas[0] {
				moved++
			}
		}
		return moved
	}
	moved := preferred()
	require.Positive(t, moved, "node 1 led a partition before its restart")

	// An unclean election (kafka-leader-election.sh --election-type unclean) touches
	// only partitions without an eligible leader: here none.
	res, err := adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"elect": {0: {}, 1: {}, 2: {}}})
	require.NoError(t, err)
	for p, r := range res["elect"] {
		require.ErrorIs(t, r.Err, kerr.ElectionNotNeeded, "partition %d", p)
	}
	require.Equal(t, moved, preferred(), "leadership stays where it is")

	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"elect": {0: {}, 1: {}, 2: {}}})
	require.NoError(t, err)
	for _, ps := range res {
		for p, r := range ps {
			if r.Err != nil {
				require.ErrorIs(t, r.Err, kerr.ElectionNotNeeded, "partition %d", p)
			}
		}
	}
	c.await(30*time.Second, "every partition led by its preferred replica", func() bool {
		return preferred() == 0
	})
}
