package broker

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
)

// requirePlaced checks every partition of a placed topic: rf distinct replicas among
// the live brokers, all in the ISR, the first leading, epochs 0.
func requirePlaced(t *testing.T, states []meta.PartitionState, parts, rf int,
	live ...int32) {
	t.Helper()
	require.Len(t, states, parts)
	for p, s := range states {
		require.Len(t, s.Replicas, rf, "partition %d", p)
		require.Len(t, slices.Compact(slices.Sorted(slices.Values(s.Replicas))), rf,
			"partition %d: distinct replicas %v", p, s.Replicas)
		for _, r := range s.Replicas {
			require.Contains(t, live, r, "partition %d", p)
		}
		require.Equal(t, s.Replicas, s.ISR)
		require.Equal(t, s.Replicas[0], s.Leader)
		require.Zero(t, s.LeaderEpoch)
		require.Zero(t, s.PartitionEpoch)
	}
}

// On the controller's node, CreateTopics is validated by the broker and placed by the
// controller: the committed TopicCreated carries partition states, the broker proposes
// no TopicCreated of its own, and the answer comes once the logs are open.
func TestQuorumCreateTopicsArePlacedByTheController(t *testing.T) {
	q := newQuorumHarness(t, 1, 3)
	resp := q.createTopics(ctTopic("t", 6, 3), ctTopic("d", 2, -1))
	for _, rt := range resp.Topics {
		require.Zero(t, rt.ErrorCode, "%s: %s", rt.Topic, deref(rt.ErrorMessage))
	}
	require.Equal(t, int16(3), resp.Topics[0].ReplicationFactor)
	require.Equal(t, int16(1), resp.Topics[1].ReplicationFactor, "default.replication.factor")
	requirePlaced(t, q.states("t"), 6, 3, 1, 2, 3)
	requirePlaced(t, q.states("d"), 2, 1, 1, 2, 3)
	require.Zero(t, q.brokerProposed(meta.KindTopicCreated))
	require.Equal(t, 2, q.ctlRecs[meta.KindTopicCreated])
	require.True(t, q.hosted("t", 5), "every partition is still opened here (h8-repl)")
	// Leaders spread: 6 partitions over 3 brokers, 2 each.
	leads := map[int32]int{}
	for _, s := range q.states("t") {
		leads[s.Leader]++
	}
	require.Equal(t, map[int32]int{1: 2, 2: 2, 3: 2}, leads)
	for _, op := range q.b.Pending() {
		// Only this node's fetchers, following the partitions others lead.
		require.Equal(t, PendingFollower, op.Kind, "%+v", op)
	}
}

// A replication factor above the live brokers is INVALID_REPLICATION_FACTOR with a
// message saying so, also with ValidateOnly; a fenced broker does not count.
func TestQuorumReplicationFactorAboveTheLiveBrokersIsRefused(t *testing.T) {
	q := newQuorumHarness(t, 1, 2)
	q.register(3, meta.BrokerFenced)
	for _, validate := range []bool{false, true} {
		rt := q.createTopicsAt(maxVersion(kmsg.CreateTopics), validate, ctTopic("t", 1, 3)).Topics[0]
		requireCode(t, kerr.InvalidReplicationFactor, rt.ErrorCode)
		require.Contains(t, deref(rt.ErrorMessage), "only 2 broker(s) are live")
	}
	rt := q.createTopicsAt(maxVersion(kmsg.CreateTopics), true, ctTopic("t", 1, 2)).Topics[0]
	require.Zero(t, rt.ErrorCode)
	require.Nil(t, q.b.image.Topic("t"), "validate only")
	rt = q.createTopics(ctTopic("t", 1, 0)).Topics[0]
	requireCode(t, kerr.InvalidReplicationFactor, rt.ErrorCode)
	require.Nil(t, q.b.image.Topic("t"))

	// The controller refuses too when its view changed after the broker's check: here
	// the broker's check is passed by a stale view that the controller does not share.
	id := q.send(func() kmsg.Request {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = maxVersion(kmsg.CreateTopics)
		req.Topics = []kmsg.CreateTopicsRequestTopic{ctTopic("u", 1, 2)}
		return req
	}())
	// Fence broker 2 between the broker's validation and the controller's placement.
	require.Len(t, q.asks, 1)
	q.commitMeta(meta.Record{Kind: meta.KindBrokerChange, NodeID: 2, BrokerEpoch: q.epoch[2],
		BrokerState: meta.BrokerFenced})
	q.settle()
	r, ok := q.reply(id)
	require.True(t, ok)
	rt = r.(*kmsg.CreateTopicsResponse).Topics[0]
	requireCode(t, kerr.InvalidReplicationFactor, rt.ErrorCode)
	require.Contains(t, deref(rt.ErrorMessage), "only 1 broker(s) are live")
}

// A manual ReplicaAssignment is kept as given, checked by Kafka's rules.
func TestQuorumManualReplicaAssignmentIsHonoured(t *testing.T) {
	q := newQuorumHarness(t, 1, 3)
	assign := func(name string, lists ...[]int32) kmsg.CreateTopicsRequestTopic {
		tt := ctTopic(name, -1, -1)
		for p, l := range lists {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(p), l
			tt.ReplicaAssignment = append(tt.ReplicaAssignment, a)
		}
		return tt
	}
	rt := q.createTopics(assign("m", []int32{3, 1}, []int32{2, 3})).Topics[0]
	require.Zero(t, rt.ErrorCode, deref(rt.ErrorMessage))
	require.Equal(t, int16(2), rt.ReplicationFactor)
	require.Equal(t, []meta.PartitionState{
		{Replicas: []int32{3, 1}, ISR: []int32{3, 1}, Leader: 3},
		{Replicas: []int32{2, 3}, ISR: []int32{2, 3}, Leader: 2},
	}, q.states("m"))
	for _, bad := range []kmsg.CreateTopicsRequestTopic{
		assign("x", []int32{1, 9}),             // unknown broker
		assign("x", []int32{1, 1}),             // twice
		assign("x", []int32{1, 2}, []int32{3}), // uneven
	} {
		rt := q.createTopics(bad).Topics[0]
		requireCode(t, kerr.InvalidReplicaAssignment, rt.ErrorCode, deref(rt.ErrorMessage))
	}
	require.Nil(t, q.b.image.Topic("x"))
}

// CreatePartitions on the controller's node places the new partitions with the topic's
// replication factor, or as a manual assignment says.
func TestQuorumCreatePartitionsPlacesTheNewPartitions(t *testing.T) {
	q := newQuorumHarness(t, 1, 3)
	q.mustCreateRF("t", 2, 2)
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = maxVersion(kmsg.CreatePartitions)
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "t", 5
	req.Topics = append(req.Topics, rt)
	resp := q.createPartitions(req)
	require.Zero(t, resp.Topics[0].ErrorCode, deref(resp.Topics[0].ErrorMessage))
	requirePlaced(t, q.states("t"), 5, 2, 1, 2, 3)
	require.True(t, q.hosted("t", 4))
	require.Zero(t, q.brokerProposed(meta.KindPartitionsAdded))

	req.Topics[0].Count = 6
	a := kmsg.NewCreatePartitionsRequestTopicAssignment()
	a.Replicas = []int32{3, 2}
	req.Topics[0].Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{a}
	resp = q.createPartitions(req)
	require.Zero(t, resp.Topics[0].ErrorCode, deref(resp.Topics[0].ErrorMessage))
	require.Equal(t, []int32{3, 2}, q.states("t")[5].Replicas)

	req.Topics[0].Count = 7
	req.Topics[0].Assignment[0].Replicas = []int32{3}
	resp = q.createPartitions(req)
	requireCode(t, kerr.InvalidReplicaAssignment, resp.Topics[0].ErrorCode,
		"one replica for a topic of two")
	require.Len(t, q.states("t"), 6)
}

// mustCreateRF creates a topic with a replication factor and requires success.
func (q *quorumHarness) mustCreateRF(name string, parts int32, rf int16) {
	q.t.Helper()
	rt := q.createTopics(ctTopic(name, parts, rf)).Topics[0]
	require.Zero(q.t, rt.ErrorCode, "create %s: %s", name, deref(rt.ErrorMessage))
}

// Auto-creation and the offsets topic go through the controller on its node: the
// offsets topic gets min(offsets.topic.replication.factor, live brokers) replicas.
// (The offsets topic is asked for with one replica here: with two, a commit waits for
// the second broker, which this harness does not run; TestClusterCreatesTopicsThrough
// TheController checks the cap with three real nodes.)
func TestQuorumAutoCreatedAndOffsetsTopicsArePlaced(t *testing.T) {
	q := newQuorumHarness(t, 1, 2, groupOpts, func(c *Config) {
		c.Groups.OffsetsReplicationFactor = 1
	})
	mt := q.metadataAt(maxVersion(kmsg.Metadata), true, "auto").Topics[0]
	require.Zero(t, mt.ErrorCode)
	requirePlaced(t, q.states("auto"), int(q.cfg.NumPartitions), 1, 1, 2)

	// The first commit asks for the offsets topic and is answered
	// COORDINATOR_NOT_AVAILABLE, as Kafka answers while it creates it.
	codes := commitCodes(q.do(commitReq("g", -1, "", "auto", int32(0), int64(5))))
	require.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code}, codes)
	q.settle()
	requirePlaced(t, q.states(group.OffsetsTopic), int(q.cfg.Groups.OffsetsPartitions), 1,
		1, 2)
	// Each group is coordinated by the leader of its offsets partition.
	here, there := q.groupLedBy(t, 1), q.groupLedBy(t, 2)
	codes = commitCodes(q.do(commitReq(here, -1, "", "auto", int32(0), int64(5))))
	require.Equal(t, []int16{0}, codes)
	off, code := q.fetchOffset(maxVersion(kmsg.OffsetFetch), here, "auto", 0)
	require.Zero(t, code)
	require.Equal(t, int64(5), off)
	codes = commitCodes(q.do(commitReq(there, -1, "", "auto", int32(0), int64(5))))
	require.Equal(t, []int16{kerr.NotCoordinator.Code}, codes)
	_, port, code := q.coordinatorFor(there)
	require.Zero(t, code)
	require.Equal(t, int32(9092), port, "node 2's registered address")
	require.Zero(t, q.brokerProposed(meta.KindTopicCreated))
}

// InitProducerId on a quorum node takes its ids from blocks the controller allocates.
func TestQuorumProducerIDsComeFromTheController(t *testing.T) {
	q := newQuorumHarness(t, 1, 1)
	pid := func() int64 {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = maxVersion(kmsg.InitProducerID)
		resp := q.do(req).(*kmsg.InitProducerIDResponse)
		require.Zero(t, resp.ErrorCode)
		return resp.ProducerID
	}
	require.Equal(t, int64(0), pid())
	require.Equal(t, int64(1), pid())
	require.Equal(t, int64(controller.ProducerIDBlock), q.ctl.Image().NextProducerID())
	require.Zero(t, q.brokerProposed(meta.KindProducerIDBlock))
	require.Equal(t, []controller.Message{controller.AllocateProducerIDs{NodeID: 1}}, q.asked)
}

// On a node that does not lead the quorum: CreateTopics, CreatePartitions and
// DeleteTopics are answered NOT_CONTROLLER; auto-creation is forwarded to the
// controller's node as a CreateTopics and answered LEADER_NOT_AVAILABLE (once per topic
// in flight); producer-id blocks are asked of the leader's controller; the offsets topic
// is forwarded, and group writes wait for it with COORDINATOR_NOT_AVAILABLE.
func TestQuorumNonControllerAnswersNotControllerAndForwards(t *testing.T) {
	q := newQuorumHarness(t, 2, 3, groupOpts)
	rt := q.createTopics(ctTopic("t", 1, 1)).Topics[0]
	requireCode(t, kerr.NotController, rt.ErrorCode)
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "t", 2
	cp.Topics = append(cp.Topics, cpt)
	requireCode(t, kerr.NotController, q.createPartitions(cp).Topics[0].ErrorCode)
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Version, dt.TopicNames = 5, []string{"t"}
	requireCode(t, kerr.NotController, q.deleteTopics(dt).Topics[0].ErrorCode)

	// Auto-creation: forwarded once while in flight.
	for range 2 {
		mt := q.metadataAt(maxVersion(kmsg.Metadata), true, "auto").Topics[0]
		requireCode(t, kerr.LeaderNotAvailable, mt.ErrorCode)
	}
	peers := q.takePeers()
	require.Len(t, peers, 1)
	require.Equal(t, int32(2), peers[0].Node)
	fwd := peers[0].Msg.(*kmsg.CreateTopicsRequest)
	require.Len(t, fwd.Topics, 1)
	require.Equal(t, "auto", fwd.Topics[0].Topic)
	require.Equal(t, int32(-1), fwd.Topics[0].NumPartitions, "the controller's defaults")
	ans := fwd.ResponseKind().(*kmsg.CreateTopicsResponse)
	q.step(PeerReply{Node: 2, ID: peers[0].ID, Msg: ans})
	q.metadataAt(maxVersion(kmsg.Metadata), true, "auto")
	require.Len(t, q.takePeers(), 1, "answered: a retry forwards again")

	// Producer ids: asked of node 2's controller.
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = maxVersion(kmsg.InitProducerID)
	id := q.send(req)
	q.settle()
	remote := q.takeRemote()
	require.Len(t, remote, 1)
	require.Equal(t, int32(2), remote[0].to)
	require.Equal(t, controller.AllocateProducerIDs{NodeID: 1}, remote[0].msg)
	q.step(ControllerAnswer{ID: remote[0].id, Resp: controller.AllocateProducerIDsResponse{
		Start: 5000, Len: 1000}})
	r, ok := q.reply(id)
	require.True(t, ok)
	require.Equal(t, int64(5000), r.(*kmsg.InitProducerIDResponse).ProducerID)

	// The offsets topic: forwarded with its replicas capped to the live brokers (3).
	q.mustCreateAsController("auto", 1)
	commit := q.send(commitReq("g", -1, "", "auto", int32(0), int64(5)))
	q.settle()
	peers = q.takePeers()
	require.Len(t, peers, 1)
	fwd = peers[0].Msg.(*kmsg.CreateTopicsRequest)
	require.Equal(t, group.OffsetsTopic, fwd.Topics[0].Topic)
	require.Equal(t, int16(3), fwd.Topics[0].ReplicationFactor)
	require.Equal(t, q.cfg.Groups.OffsetsPartitions, fwd.Topics[0].NumPartitions)
	q.step(PeerReply{Node: 2, ID: peers[0].ID, Err: errTest})
	r, ok = q.reply(commit)
	require.True(t, ok)
	requireCode(t, kerr.CoordinatorNotAvailable, commitCodes(r)[0])

	// The controller's node creates it; the next commit finds it and loads it.
	q.commitMeta(meta.Record{Kind: meta.KindTopicCreated, Topic: group.OffsetsTopic,
		TopicID: [16]byte{9}, Partitions: q.cfg.Groups.OffsetsPartitions,
		ReplicationFactor: 1, PartitionStates: placedOn(q.cfg.Groups.OffsetsPartitions, 2)})
	q.settle()
	// Every offsets partition is led by node 2: its group coordinator is there.
	require.Equal(t, []int16{kerr.NotCoordinator.Code}, commitCodes(q.do(commitReq("g", -1,
		"", "auto", int32(0), int64(5)))))
	require.Empty(t, q.takePeers())
}

var errTest = errTestType{}

type errTestType struct{}

func (errTestType) Error() string { return "test: not answered" }

// placedOn returns n partition states led by node alone.
func placedOn(n int32, node int32) []meta.PartitionState {
	out := make([]meta.PartitionState, n)
	for i := range out {
		out[i] = meta.PartitionState{Replicas: []int32{node}, ISR: []int32{node},
			Leader: node}
	}
	return out
}

// mustCreateAsController commits a topic as another node's controller would create it.
func (q *quorumHarness) mustCreateAsController(name string, parts int32) {
	if q.b.image.Topic(name) != nil {
		return
	}
	q.commitMeta(meta.Record{Kind: meta.KindTopicCreated, Topic: name,
		TopicID: [16]byte{byte(len(q.env.committed))}, Partitions: parts,
		ReplicationFactor: 1, PartitionStates: placedOn(parts, 2)})
	q.settle()
}
