package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// TestUnregisterADeadNonvoter: three voters and node 4 outside --voters (a raft
// non-voter and a broker), partition t-0 on nodes 1 and 4. While node 4 runs,
// UnregisterBroker for it is refused as alive, and for a voter as a voter. Node 4
// stops; once it is fenced, the request sent to a node that is not the controller is
// forwarded and refused for the replica it still holds. Once t-0 is reassigned to 1
// and 2 it succeeds: no node's image holds broker 4 any more, the quorum leader drops
// it from the raft non-voters, and a second request says BROKER_ID_NOT_REGISTERED.
func TestUnregisterADeadNonvoter(t *testing.T) {
	voters := []raftmeta.Voter{{ID: 1, Addr: freeAddr(t)}, {ID: 2, Addr: freeAddr(t)},
		{ID: 3, Addr: freeAddr(t)}}
	nodes := make([]*runtime.Node, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range nodes {
		if i < 3 {
			nodes[i] = clusterNode(t, int32(i+1), t.TempDir(), voters)
		} else {
			cfg := broker.DefaultConfig()
			cfg.NodeID = 4
			ctl := controller.DefaultConfig()
			ctl.SessionTimeoutMs, ctl.HeartbeatIntervalMs = 1500, 200
			nodes[i] = runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0",
				DataDir: t.TempDir(), Config: cfg, Controller: ctl,
				Logger:       zaptest.NewLogger(t).Named("n4"),
				DrainTimeout: 2 * time.Second, Voters: voters,
				ControllerListen: freeAddr(t), QuorumTiming: raftmeta.SteadyTestTiming()})
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = nodes[i].Start(context.Background()) }()
	}
	wg.Wait()
	for i, n := range nodes {
		require.NoError(t, errs[i])
		t.Cleanup(func() { _ = n.Close() })
	}
	require.Eventually(t, func() bool { return len(brokersSeen(nodes[0])) == 4 },
		30*time.Second, 20*time.Millisecond, "four brokers registered")
	leader := func() int {
		for i, n := range nodes[:3] {
			if n.QuorumLeader() == int32(i+1) {
				return i
			}
		}
		return -1
	}
	require.Eventually(t, func() bool {
		l := leader()
		return l >= 0 && slices.Contains(nodes[l].QuorumNonvoters(), 4)
	}, 20*time.Second, 20*time.Millisecond, "node 4 is a raft non-voter")

	unregister := func(via *runtime.Node, id int32) *kmsg.UnregisterBrokerResponse {
		t.Helper()
		cl := newClient(t, via)
		defer cl.Close()
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := cl.SeedBrokers()[0].Request(testCtx(t, 20*time.Second), req)
		require.NoError(t, err)
		return resp.(*kmsg.UnregisterBrokerResponse)
	}
	message := func(r *kmsg.UnregisterBrokerResponse) string {
		if r.ErrorMessage == nil {
			return ""
		}
		return *r.ErrorMessage
	}
	// Partition t-0 lives on nodes 1 and 4.
	l := leader()
	require.GreaterOrEqual(t, l, 0)
	ctlClient := newClient(t, nodes[l])
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "t", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1, 4}
	ct.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{ra}
	create.Topics = []kmsg.CreateTopicsRequestTopic{ct}
	create.TimeoutMillis = 10000
	// Broker 4 is registered before the controller counts it eligible for replicas
	// (unfenced after its first heartbeats): until then the assignment is refused.
	require.Eventually(t, func() bool {
		cr, err := create.RequestWith(testCtx(t, 15*time.Second), ctlClient)
		if err != nil {
			t.Logf("create t: %v", err)
			return false
		}
		code := cr.Topics[0].ErrorCode
		if code != 0 && cr.Topics[0].ErrorMessage != nil {
			t.Logf("create t: %s", *cr.Topics[0].ErrorMessage)
		}
		return code == 0 || code == kerr.TopicAlreadyExists.Code // an earlier try's answer lost
	}, 20*time.Second, 200*time.Millisecond, "t was not created on nodes 1 and 4")

	r := unregister(nodes[0], 4)
	require.Equal(t, kerr.InvalidRequest.Code, r.ErrorCode)
	require.Contains(t, message(r), "alive")
	r = unregister(nodes[0], 2)
	require.Equal(t, kerr.InvalidRequest.Code, r.ErrorCode)
	require.Contains(t, message(r), "voter of the metadata quorum")

	require.NoError(t, nodes[3].Close())
	l = leader()
	require.GreaterOrEqual(t, l, 0)
	via := nodes[(l+1)%3] // not the controller: it forwards
	require.Eventually(t, func() bool {
		r := unregister(via, 4)
		return r.ErrorCode == kerr.InvalidRequest.Code &&
			strings.Contains(message(r), "still hosts 1 partition replicas (t-0 first)")
	}, 20*time.Second, 300*time.Millisecond, "broker 4 refused for its replica once fenced")

	// Move t-0 off the dead node, as an operator would (sluice topic reassign).
	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = "t"
	ap := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	ap.Partition, ap.Replicas = 0, []int32{1, 2}
	at.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{ap}
	alter.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{at}
	require.Eventually(t, func() bool { // sent to the controller, wherever it is now
		l = leader()
		if l < 0 {
			return false
		}
		ar, err := alter.RequestWith(testCtx(t, 15*time.Second), newClient(t, nodes[l]))
		return err == nil && ar.ErrorCode == 0 && ar.Topics[0].Partitions[0].ErrorCode == 0
	}, 20*time.Second, 100*time.Millisecond, "the reassignment was not accepted")
	require.Eventually(t, func() bool {
		var replicas []int32
		nodes[l].ControllerImage(func(im *meta.Image, _ bool) {
			s, _, _ := im.Partition("t", 0)
			replicas = s.Replicas
		})
		return slices.Equal(replicas, []int32{1, 2})
	}, 20*time.Second, 20*time.Millisecond, "t-0 moved off the dead node")

	require.Eventually(t, func() bool {
		r := unregister(via, 4)
		if r.ErrorCode != 0 {
			t.Logf("unregister 4: %s", message(r))
		}
		return r.ErrorCode == 0
	}, 20*time.Second, 300*time.Millisecond, "broker 4 unregistered once fenced")
	for i, n := range nodes[:3] {
		require.Eventually(t, func() bool {
			_, ok := brokersSeen(n)[4]
			return !ok
		}, 10*time.Second, 20*time.Millisecond, "node %d still holds broker 4", i+1)
	}
	require.Eventually(t, func() bool {
		l := leader()
		return l >= 0 && !slices.Contains(nodes[l].QuorumNonvoters(), 4)
	}, 20*time.Second, 20*time.Millisecond, "node 4 is still a raft non-voter")
	r = unregister(via, 4)
	require.Equal(t, kerr.BrokerIDNotRegistered.Code, r.ErrorCode, fmt.Sprint(message(r)))
}
