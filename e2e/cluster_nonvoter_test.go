package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// addNonvoter starts node len+1 outside --voters (it joins the quorum as a non-voter)
// and waits until it listens.
func (c *testCluster) addNonvoter() *clusterNode {
	t := c.t
	t.Helper()
	id := int32(len(c.nodes) + 1)
	nd := &clusterNode{id: id, kafka: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		ctl:    fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		data:   filepath.Join(filepath.Dir(c.nodes[0].data), fmt.Sprintf("data%d", id)),
		config: c.nodes[0].config}
	c.nodes = append(c.nodes, nd)
	c.spawn(nd)
	c.awaitListening(nd)
	return nd
}

// describeQuorum is DescribeQuorum as nd answers it (nil on error).
func (c *testCluster) describeQuorum(nd *clusterNode) *kmsg.DescribeQuorumResponseTopicPartition {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{
		kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = []kmsg.DescribeQuorumRequestTopic{rt}
	resp, err := c.request(nd, req, 3*time.Second)
	if err != nil {
		return nil
	}
	r := resp.(*kmsg.DescribeQuorumResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 ||
		r.Topics[0].Partitions[0].ErrorCode != 0 {
		return nil
	}
	return &r.Topics[0].Partitions[0]
}

// holds says whether nd is a replica, in the ISR, of n partitions of topic (metadata
// from every running node agreeing) and every partition has a full ISR.
func (c *testCluster) holds(nd *clusterNode, topic string, partitions, n int) bool {
	for _, at := range c.running() {
		m := c.metadata(at)
		if !fullISR(m, topic, partitions) {
			return false
		}
		got := 0
		for _, tp := range m.Topics {
			if tp.Topic == nil || *tp.Topic != topic {
				continue
			}
			for _, p := range tp.Partitions {
				if slices.Contains(p.Replicas, nd.id) && slices.Contains(p.ISR, nd.id) {
					got++
				}
			}
		}
		if got != n {
			return false
		}
	}
	return true
}

// TestClusterAddsANonvoterBrokerAndRebalancesOntoIt: three voters with an acks=all
// topic (4 partitions, RF 3); node 4 is started with the same --voters, which do not
// name it. It joins the quorum as a non-voter (an observer in DescribeQuorum, never a
// voter), registers and is listed as a broker. `sluice topic reassign --rebalance
// --dry-run` prints the plan and moves nothing; without --dry-run it moves 3 of the 12
// replicas onto node 4, which ends in their ISR. Every acknowledged record is read back.
// Node 4 keeps its place across its own restart and across a change of quorum leader.
func TestClusterAddsANonvoterBrokerAndRebalancesOntoIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four node processes")
	}
	c := startCluster(t, 3)
	boot := strings.Join(c.seeds(), ",")
	code, out, _ := runSluice(t, 30*time.Second, nil, "topic", "create", "grow",
		"--partitions", "4", "--replication-factor", "3", "--config",
		"min.insync.replicas=2", "--bootstrap", boot)
	require.Equal(t, 0, code, out)
	c.awaitHealthy("grow", 4, 30*time.Second)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("grow"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const records = 400
	var recs []*kgo.Record
	for i := 0; i < records; i++ {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint("r", i))})
	}
	require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())

	nd4 := c.addNonvoter()
	c.awaitBrokers(4, 30*time.Second)
	observer := func(on *clusterNode) bool {
		q := c.describeQuorum(on)
		if q == nil {
			return false
		}
		for _, v := range q.CurrentVoters {
			if v.ReplicaID == nd4.id {
				t.Fatalf("node 4 is listed as a voter: %+v", q.CurrentVoters)
			}
		}
		return slices.ContainsFunc(q.Observers, func(
			s kmsg.DescribeQuorumResponseTopicPartitionReplicaState) bool {
			return s.ReplicaID == nd4.id && s.LogEndOffset > 0
		}) && len(q.CurrentVoters) == 3 && q.LeaderID != nd4.id
	}
	leaderNode := func() *clusterNode {
		l := c.quorumLeader()
		require.True(t, l > 0 && l != nd4.id, "quorum leader %d", l)
		return c.node(l)
	}
	c.await(30*time.Second, "node 4 is an observer of the quorum", func() bool {
		return observer(leaderNode())
	})

	code, out, _ = runSluice(t, 30*time.Second, nil, "topic", "reassign", "--rebalance",
		"--dry-run", "--bootstrap", boot)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `(?m)^4\s+0\s+3$`, out, "the plan gives node 4 three replicas")
	require.Len(t, regexp.MustCompile(`(?m)^grow\s+\d\s+`).FindAllString(out, -1), 3, out)
	code, out, _ = runSluice(t, 30*time.Second, nil, "topic", "reassignments",
		"--bootstrap", boot)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "no reassignment in progress", "a dry run moves nothing")

	code, out, _ = runSluice(t, 60*time.Second, nil, "topic", "reassign", "--rebalance",
		"--wait", "--timeout", "20s", "--bootstrap", boot)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "all 3 moves complete", out)
	c.await(30*time.Second, "node 4 holds 3 replicas, in their ISR", func() bool {
		return c.holds(nd4, "grow", 4, 3)
	})

	consumeAll := func() {
		t.Helper()
		cons, err := kgo.NewClient(kgo.SeedBrokers(nd4.kafka), kgo.ConsumeTopics("grow"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		require.NoError(t, err)
		defer cons.Close()
		seen := map[string]bool{}
		cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
		defer ccancel()
		for len(seen) < records && cctx.Err() == nil {
			cons.PollFetches(cctx).EachRecord(func(r *kgo.Record) {
				require.False(t, seen[string(r.Value)], "%s read twice", r.Value)
				seen[string(r.Value)] = true
			})
		}
		require.Len(t, seen, records, "every acknowledged record is read back")
	}
	consumeAll()

	code, out, _ = runSluice(t, 30*time.Second, nil, "cluster", "describe",
		"--bootstrap", c.node(1).kafka)
	require.Equal(t, 0, code, out)
	require.Regexp(t, `(?m)^4\s+observer\s+\d+`, out, "node 4 observes the quorum")
	require.Regexp(t, `(?m)^4\s+127\.0\.0\.1:\d+\s+-\s+live$`, out, "node 4 is a broker")

	// Its own restart: it needs no join again and rejoins the ISRs.
	c.stop(nd4)
	c.restart(nd4)
	c.await(30*time.Second, "node 4 back in the ISRs after its restart", func() bool {
		return c.holds(nd4, "grow", 4, 3)
	})

	// A new quorum leader: node 4 follows it, is still an observer and a broker.
	old := leaderNode()
	c.stop(old)
	c.await(30*time.Second, "a new quorum leader sees node 4 as an observer", func() bool {
		l := c.quorumLeader()
		return l > 0 && l != old.id && observer(c.node(l))
	})
	code, out, _ = runSluice(t, 30*time.Second, nil, "topic", "create", "later",
		"--partitions", "4", "--replication-factor", "1", "--bootstrap", nd4.kafka)
	require.Equal(t, 0, code, out)
	c.await(30*time.Second, "node 4 applies a topic created by the new leader", func() bool {
		m := c.metadata(nd4)
		return m != nil && fullISR(m, "later", 4)
	})
	c.restart(old)
	c.awaitBrokers(4, 30*time.Second)
	consumeAll()
}
