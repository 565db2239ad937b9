package runtime_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// startCluster starts size nodes with one metadata quorum and waits until every node is
// registered and unfenced and sees all of them; it returns the nodes, by id - 1.
func startCluster(t *testing.T, size int) []*runtime.Node {
	t.Helper()
	voters := make([]raftmeta.Voter, size)
	for i := range voters {
		voters[i] = raftmeta.Voter{ID: int32(i + 1), Addr: freeAddr(t)}
	}
	nodes := make([]*runtime.Node, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i := range nodes {
		nodes[i] = clusterNode(t, int32(i+1), t.TempDir(), voters)
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = nodes[i].Start(context.Background()) }()
	}
	wg.Wait()
	for i, n := range nodes {
		require.NoError(t, errs[i])
		t.Cleanup(func() { _ = n.Close() })
	}
	for _, n := range nodes {
		waitUnfenced(t, n)
	}
	for _, n := range nodes {
		require.Eventually(t, func() bool {
			seen := 0
			for _, b := range brokersSeen(n) {
				if b.State == meta.BrokerUnfenced {
					seen++
				}
			}
			return seen == size
		}, 10*time.Second, 10*time.Millisecond, "every node sees every broker unfenced")
	}
	return nodes
}

// activeController returns the index of the node whose controller is active.
func activeController(t *testing.T, nodes []*runtime.Node) int {
	t.Helper()
	leader := -1
	require.Eventually(t, func() bool {
		for i, n := range nodes {
			n.ControllerImage(func(_ *meta.Image, active bool) {
				if active {
					leader = i
				}
			})
		}
		return leader >= 0
	}, 10*time.Second, 10*time.Millisecond)
	return leader
}

// topicStates returns a topic's partition states in n's image (nil: not there yet).
func topicStates(n *runtime.Node, topic string) []meta.PartitionState {
	var out []meta.PartitionState
	n.ControllerImage(func(im *meta.Image, _ bool) {
		if t := im.Topic(topic); t != nil {
			for _, s := range t.States {
				out = append(out, s.Clone())
			}
			if out == nil {
				out = []meta.PartitionState{}
			}
		}
	})
	return out
}

// requireSpread checks parts partition states of rf distinct replicas among ids.
func requireSpread(t *testing.T, states []meta.PartitionState, parts, rf int, ids ...int32) {
	t.Helper()
	require.Len(t, states, parts)
	for p, s := range states {
		r := slices.Clone(s.Replicas)
		slices.Sort(r)
		require.Len(t, slices.Compact(r), rf, "partition %d: %v", p, s.Replicas)
		for _, id := range s.Replicas {
			require.Contains(t, ids, id)
		}
		require.Contains(t, s.ISR, s.Leader)
	}
}

// ask sends req to node n itself (not routed by the client) and returns the answer.
func ask(t *testing.T, n *runtime.Node, req kmsg.Request) kmsg.Response {
	t.Helper()
	cl := newClient(t, n)
	defer cl.Close()
	resp, err := cl.SeedBrokers()[0].Request(testCtx(t, 10*time.Second), req)
	require.NoError(t, err)
	return resp
}

// A quorum of one: topics are placed on the node (replicas [1]), a replication factor
// above one is refused, idempotent producers get ids from the controller, and the
// offsets topic is created with one replica (offsets.topic.replication.factor capped to
// the live brokers).
func TestClusterOfOneCreatesPlacedTopics(t *testing.T) {
	n := startCluster(t, 1)[0]
	cl := newClient(t, n, kgo.DefaultProduceTopic("t"), kgo.ConsumerGroup("g"),
		kgo.ConsumeTopics("t"))
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 30*time.Second)
	res, err := adm.CreateTopics(ctx, 3, -1, nil, "t")
	require.NoError(t, err)
	require.NoError(t, res["t"].Err)
	requireSpread(t, topicStates(n, "t"), 3, 1, 1)

	res, err = adm.CreateTopics(ctx, 1, 2, nil, "wide")
	require.NoError(t, err)
	require.ErrorIs(t, res["wide"].Err, kerr.InvalidReplicationFactor)
	require.Contains(t, res["wide"].ErrMessage, "only 1 broker(s) are live")

	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr())
	fetches := cl.PollFetches(ctx)
	require.NoError(t, fetches.Err())
	require.NoError(t, cl.CommitUncommittedOffsets(ctx))
	requireSpread(t, topicStates(n, "__consumer_offsets"), 8, 1, 1)
}

// Three nodes with one quorum: a CreateTopics to a node that is not the controller is
// answered NOT_CONTROLLER; franz-go, seeded with that node only, finds the controller
// and creates the topic there, placed with its replication factor on distinct brokers
// (every node applies the same placement); a factor above the brokers is refused; a
// manual assignment is kept; CreatePartitions places the new partitions; Metadata
// auto-creation and __consumer_offsets on a non-controller are forwarded; and producer
// ids handed out by two nodes never overlap.
func TestClusterCreatesTopicsThroughTheController(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := activeController(t, nodes)
	other := nodes[(leader+1)%3]

	// NOT_CONTROLLER from a node that does not lead.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "direct", 1, 1
	req.Topics = append(req.Topics, rt)
	resp := ask(t, other, req).(*kmsg.CreateTopicsResponse)
	require.Equal(t, kerr.NotController.Code, resp.Topics[0].ErrorCode)

	// kadm seeded with that node: routed to the controller.
	cl := newClient(t, other)
	adm := kadm.NewClient(cl)
	ctx := testCtx(t, 60*time.Second)
	res, err := adm.CreateTopics(ctx, 6, 3, nil, "t")
	require.NoError(t, err)
	require.NoError(t, res["t"].Err)
	for _, n := range nodes {
		require.Eventually(t, func() bool { return topicStates(n, "t") != nil },
			5*time.Second, 10*time.Millisecond)
		requireSpread(t, topicStates(n, "t"), 6, 3, 1, 2, 3)
		require.Equal(t, topicStates(nodes[leader], "t"), topicStates(n, "t"))
	}
	res, err = adm.CreateTopics(ctx, 2, 2, nil, "two")
	require.NoError(t, err)
	require.NoError(t, res["two"].Err)
	requireSpread(t, topicStates(nodes[leader], "two"), 2, 2, 1, 2, 3)

	res, err = adm.CreateTopics(ctx, 1, 4, nil, "four")
	require.NoError(t, err)
	require.ErrorIs(t, res["four"].Err, kerr.InvalidReplicationFactor)

	// A manual assignment, through the client's routing to the controller.
	manual := kmsg.NewPtrCreateTopicsRequest()
	mt := kmsg.NewCreateTopicsRequestTopic()
	mt.Topic, mt.NumPartitions, mt.ReplicationFactor = "manual", -1, -1
	for p, rs := range [][]int32{{3, 1}, {2, 3}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), rs
		mt.ReplicaAssignment = append(mt.ReplicaAssignment, a)
	}
	manual.Topics = append(manual.Topics, mt)
	mresp, err := manual.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, mresp.Topics[0].ErrorCode)
	ms := topicStates(nodes[leader], "manual")
	require.Equal(t, [][]int32{{3, 1}, {2, 3}}, [][]int32{ms[0].Replicas, ms[1].Replicas})

	// CreatePartitions places the new ones with the topic's factor.
	cres, err := adm.CreatePartitions(ctx, 2, "t")
	require.NoError(t, err)
	require.NoError(t, cres["t"].Err)
	requireSpread(t, topicStates(nodes[leader], "t"), 8, 3, 1, 2, 3)

	// Auto-creation asked of a non-controller: forwarded, created, placed.
	md := kmsg.NewPtrMetadataRequest()
	md.AllowAutoTopicCreation = true
	mdt := kmsg.NewMetadataRequestTopic()
	mdt.Topic = kmsg.StringPtr("auto")
	md.Topics = append(md.Topics, mdt)
	require.Eventually(t, func() bool {
		m := ask(t, other, md).(*kmsg.MetadataResponse)
		return m.Topics[0].ErrorCode == 0
	}, 10*time.Second, 50*time.Millisecond, "the forwarded creation reaches this node")
	requireSpread(t, topicStates(other, "auto"), 3, 1, 1, 2, 3)

	// A commit on a non-controller creates __consumer_offsets through the controller:
	// COORDINATOR_NOT_AVAILABLE while it is created; then the group's offsets partition
	// has a leader, this node or another (NOT_COORDINATOR: clients ask FindCoordinator);
	// 3 replicas.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "auto"
	cpart := kmsg.NewOffsetCommitRequestTopicPartition()
	cpart.Offset = 0
	ct.Partitions = append(ct.Partitions, cpart)
	commit.Topics = append(commit.Topics, ct)
	require.Eventually(t, func() bool {
		r := ask(t, other, commit).(*kmsg.OffsetCommitResponse)
		code := r.Topics[0].Partitions[0].ErrorCode
		require.Contains(t, []int16{0, kerr.CoordinatorNotAvailable.Code,
			kerr.NotCoordinator.Code}, code)
		return code != kerr.CoordinatorNotAvailable.Code
	}, 10*time.Second, 50*time.Millisecond, "the offsets topic is created")
	requireSpread(t, topicStates(other, "__consumer_offsets"), 8, 3, 1, 2, 3)

	// Producer ids: each node asks the controller for blocks; none overlap.
	seen := map[int64]int{}
	for i, n := range nodes {
		for range 3 {
			// COORDINATOR_NOT_AVAILABLE is retriable (a block not allocated yet, or the
			// controller moved): clients retry it, and so does this check.
			var r *kmsg.InitProducerIDResponse
			require.Eventually(t, func() bool {
				r = ask(t, n, kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
				require.Contains(t, []int16{0, kerr.CoordinatorNotAvailable.Code}, r.ErrorCode)
				return r.ErrorCode == 0
			}, 10*time.Second, 20*time.Millisecond, "node %d", i+1)
			prev, dup := seen[r.ProducerID]
			require.False(t, dup, "producer id %d from nodes %d and %d", r.ProducerID,
				prev, i+1)
			seen[r.ProducerID] = i + 1
		}
	}
}
