package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A partition whose only ISR member is dead for good stays offline, even once its other
// replica is back (that replica may lack acknowledged records); an operator's unclean
// election (kafka-leader-election.sh --election-type unclean, kadm.ElectLiveReplica)
// gives it that replica as leader, and it takes writes again. Five voters, so that two
// of them down leave a quorum.
func TestClusterUncleanElectionBringsBackAPartitionWithoutISR(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five node processes")
	}
	c := startCluster(t, 5)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "unclean", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{4, 5}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, resp.Topics[0].ErrorCode, "create: %v", kerr.ErrorForCode(resp.Topics[0].ErrorCode))
	c.awaitHealthy("unclean", 1, 30*time.Second)

	c.kill(c.node(5))
	c.await(30*time.Second, "the ISR shrinks to [4]", func() bool {
		s := c.partitionISR("unclean", 0)
		return len(s) == 1 && s[0] == 4
	})
	c.kill(c.node(4))
	c.restart(c.node(5))
	c.await(30*time.Second, "the partition has no leader", func() bool {
		return c.partitionLeader("unclean", 0) < 0
	})
	c.await(30*time.Second, "broker 5 is listed again (registered, unfenced)", func() bool {
		m := c.metadata(c.node(1))
		if m == nil {
			return false
		}
		for _, b := range m.Brokers {
			if b.NodeID == 5 {
				return true
			}
		}
		return false
	})
	// Broker 5 is back and may lead, but it is not in the ISR: no clean election
	// brings the partition back. Watched for 2 s, bounded.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		require.Equal(t, int32(-1), c.partitionLeader("unclean", 0),
			"broker 5 is not in the ISR")
		time.Sleep(100 * time.Millisecond)
	}

	res, err := adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{"unclean": {0: {}}})
	require.NoError(t, err)
	require.NoError(t, res["unclean"][0].Err)
	c.await(30*time.Second, "broker 5 leads", func() bool {
		return c.partitionLeader("unclean", 0) == 5
	})
	p, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.DefaultProduceTopic("unclean"),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Value: []byte("back")}).FirstErr())
}
