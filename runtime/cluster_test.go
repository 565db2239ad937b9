package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// clusterNode is node id of a quorum of voters over dir, registering with a short
// session so that a stopped node is fenced within the test's bounds.
func clusterNode(t *testing.T, id int32, dir string, voters []raftmeta.Voter) *runtime.Node {
	t.Helper()
	cfg := broker.DefaultConfig()
	cfg.NodeID = id
	ctl := controller.DefaultConfig()
	ctl.SessionTimeoutMs, ctl.HeartbeatIntervalMs = 1500, 200
	return runtime.NewNode(runtime.Options{ListenAddr: freeAddr(t), DataDir: dir,
		Config: cfg, Controller: ctl, Rack: fmt.Sprintf("r%d", id),
		Logger:       zaptest.NewLogger(t).Named(fmt.Sprintf("n%d", id)),
		DrainTimeout: 2 * time.Second, Voters: voters,
		// The scripts below talk to the active controller directly: one leader throughout.
		QuorumTiming: raftmeta.SteadyTestTiming()})
}

// brokersSeen is the controller image's brokers as node n sees them.
func brokersSeen(n *runtime.Node) map[int32]meta.Broker {
	out := map[int32]meta.Broker{}
	n.ControllerImage(func(im *meta.Image, _ bool) {
		for _, b := range im.Brokers() {
			out[b.ID] = b
		}
	})
	return out
}

// metadataBrokers is how many brokers a Metadata request to n lists (-1 on error).
// Seen once: TestClusterNodes failed when the DescribeCluster of listedBrokers went to
// another node, whose image had not yet applied a fencing.
func metadataBrokers(t *testing.T, n *runtime.Node) int {
	cl := newClient(t, n)
	defer cl.Close()
	resp, err := cl.SeedBrokers()[0].Request(testCtx(t, 5*time.Second),
		kmsg.NewPtrMetadataRequest())
	if err != nil {
		return -1
	}
	return len(resp.(*kmsg.MetadataResponse).Brokers)
}

// listedBrokers asks n (and only n) for the cluster's brokers with Metadata and DescribeCluster,
// checks the two agree (ids, racks, controller), and returns the ids.
func listedBrokers(t *testing.T, n *runtime.Node) []int32 {
	t.Helper()
	cl := newClient(t, n)
	defer cl.Close()
	// Both to n itself: a client sends other requests to any broker it knows, whose
	// image may not have applied the last change yet.
	seed := cl.SeedBrokers()[0]
	raw, err := seed.Request(testCtx(t, 5*time.Second), kmsg.NewPtrMetadataRequest())
	require.NoError(t, err)
	mresp := raw.(*kmsg.MetadataResponse)
	raw, err = seed.Request(testCtx(t, 5*time.Second), kmsg.NewPtrDescribeClusterRequest())
	require.NoError(t, err)
	dresp := raw.(*kmsg.DescribeClusterResponse)
	require.Zero(t, dresp.ErrorCode)
	var ids []int32
	for _, b := range mresp.Brokers {
		ids = append(ids, b.NodeID)
		require.NotNil(t, b.Rack)
		require.Equal(t, fmt.Sprintf("r%d", b.NodeID), *b.Rack)
	}
	var dids []int32
	for _, b := range dresp.Brokers {
		dids = append(dids, b.NodeID)
	}
	require.ElementsMatch(t, ids, dids)
	require.Equal(t, mresp.ControllerID, dresp.ControllerID)
	require.Contains(t, ids, mresp.ControllerID)
	slices.Sort(ids)
	return ids
}

// Three nodes with one metadata quorum: each registers with the active controller
// (over the wire, or locally on the leader's own node) and heartbeats until unfenced;
// every node's image lists all three with their listeners and racks. A stopped node is
// fenced once its session expires, and registers again, unfenced, when it restarts.
func TestClusterNodesRegisterHeartbeatAndAreFencedWhenSilent(t *testing.T) {
	voters := []raftmeta.Voter{{ID: 1, Addr: freeAddr(t)}, {ID: 2, Addr: freeAddr(t)},
		{ID: 3, Addr: freeAddr(t)}}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	nodes := make([]*runtime.Node, 3)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range nodes {
		nodes[i] = clusterNode(t, int32(i+1), dirs[i], voters)
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = nodes[i].Start(context.Background()) }()
	}
	wg.Wait()
	for i, n := range nodes {
		require.NoError(t, errs[i])
		t.Cleanup(func() { _ = n.Close() })
	}

	allUnfenced := func(want int) func() bool {
		return func() bool {
			for _, n := range nodes[:want] {
				st, ok := n.Membership()
				if !ok || !st.Registered || st.Fenced {
					return false
				}
			}
			return true
		}
	}
	require.Eventually(t, allUnfenced(3), 20*time.Second, 20*time.Millisecond,
		"every node registered and unfenced")
	for _, n := range nodes {
		require.Eventually(t, func() bool { return len(brokersSeen(n)) == 3 },
			10*time.Second, 20*time.Millisecond)
		for i, other := range nodes {
			b := brokersSeen(n)[int32(i+1)]
			require.Equal(t, other.Addr(), fmt.Sprintf("%s:%d", b.Host, b.Port))
			require.Equal(t, fmt.Sprintf("r%d", i+1), b.Rack)
		}
	}

	// Clients see the cluster: Metadata and DescribeCluster on any node list the three
	// with their racks, and name the quorum leader as the controller.
	for _, n := range nodes {
		require.Eventually(t, func() bool { return metadataBrokers(t, n) == 3 },
			5*time.Second, 20*time.Millisecond, "each node applied every unfencing")
		require.Equal(t, []int32{1, 2, 3}, listedBrokers(t, n))
	}

	// Stop a node that does not lead the quorum: the controller fences it.
	leader := -1
	for i, n := range nodes {
		n.ControllerImage(func(_ *meta.Image, active bool) {
			if active {
				leader = i
			}
		})
	}
	require.GreaterOrEqual(t, leader, 0, "one controller is active")

	// A partition leader's AlterPartition reaches the active controller over the wire
	// (ctlwire.go): an unknown partition is refused by its decision; another node's
	// inactive controller answers NOT_CONTROLLER.
	for i, n := range nodes {
		want := kerr.NotController.Code
		if i == leader {
			want = kerr.UnknownTopicOrPartition.Code
		}
		require.Equal(t, want, alterPartitionCode(t, n, int32(i+1)), "node %d", i+1)
	}
	victim := (leader + 1) % 3
	addr := nodes[victim].Addr()
	require.NoError(t, nodes[victim].Close())
	watcher := nodes[leader]
	require.Eventually(t, func() bool {
		return brokersSeen(watcher)[int32(victim+1)].State == meta.BrokerFenced
	}, 10*time.Second, 20*time.Millisecond, "a silent node is fenced")
	epoch := brokersSeen(watcher)[int32(victim+1)].Epoch
	require.Eventually(t, func() bool { return metadataBrokers(t, watcher) == 2 },
		5*time.Second, 20*time.Millisecond, "a fenced broker is not offered to clients")
	require.Len(t, listedBrokers(t, watcher), 2)

	// Restarted over the same directory and address, it registers anew (a greater broker
	// epoch) and is unfenced.
	restarted := runtime.NewNode(func() runtime.Options {
		cfg := broker.DefaultConfig()
		cfg.NodeID = int32(victim + 1)
		ctl := controller.DefaultConfig()
		ctl.SessionTimeoutMs, ctl.HeartbeatIntervalMs = 1500, 200
		return runtime.Options{ListenAddr: addr, DataDir: dirs[victim], Config: cfg,
			Controller: ctl, Rack: fmt.Sprintf("r%d", victim+1),
			Logger: zaptest.NewLogger(t).Named("restarted"), DrainTimeout: 2 * time.Second,
			Voters: voters, QuorumTiming: raftmeta.TestTiming()}
	}())
	require.NoError(t, restarted.Start(context.Background()))
	t.Cleanup(func() { _ = restarted.Close() })
	require.Eventually(t, func() bool {
		b := brokersSeen(watcher)[int32(victim+1)]
		return b.State == meta.BrokerUnfenced && b.Epoch > epoch
	}, 15*time.Second, 20*time.Millisecond, "the restarted node is registered and unfenced")
}

// alterPartitionCode sends node n an AlterPartition from broker id for a partition that
// does not exist and returns the partition's code (or the top-level one).
func alterPartitionCode(t *testing.T, n *runtime.Node, id int32) int16 {
	t.Helper()
	cl := newClient(t, n)
	defer cl.Close()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = id, brokersSeen(n)[id].Epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = "no-such-topic", [16]byte{9}
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.NewISR = []int32{id}
	e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
	e.BrokerID = id
	rp.NewEpochISR = []kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{e}
	rt.Partitions = []kmsg.AlterPartitionRequestTopicPartition{rp}
	req.Topics = []kmsg.AlterPartitionRequestTopic{rt}
	raw, err := cl.SeedBrokers()[0].Request(testCtx(t, 5*time.Second), req)
	require.NoError(t, err)
	resp := raw.(*kmsg.AlterPartitionResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) == 0 {
		return resp.ErrorCode
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}
