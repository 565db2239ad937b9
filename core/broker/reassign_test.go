package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// reassignReq is an AlterPartitionReassignments of partitions of one topic; a nil
// replica list cancels.
func reassignReq(version int16, topic string, parts map[int32][]int32,
	order ...int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version = version
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for _, p := range order {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, parts[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{rt}
	return req
}

func (h *harness) listReassignments() *kmsg.ListPartitionReassignmentsResponse {
	return h.do(kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
}

// On the controller's node AlterPartitionReassignments goes to the controller, whose
// change starts the move; ListPartitionReassignments lists it until it completes; a
// cancel reverts it. Refusals come back per partition with Kafka's codes.
func TestQuorumAlterAndListPartitionReassignments(t *testing.T) {
	q := newQuorumHarness(t, 1, 4)
	q.register(5, meta.BrokerFenced)
	ct := ctTopic("t", -1, -1)
	for p, rs := range [][]int32{{1, 2, 3}, {2, 3, 1}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), rs
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	}
	requireCode(t, nil, q.createTopics(ct).Topics[0].ErrorCode)
	require.Empty(t, q.listReassignments().Topics)

	resp := q.do(reassignReq(0, "t", map[int32][]int32{0: {2, 3, 4}}, 0)).(*kmsg.AlterPartitionAssignmentsResponse)
	requireCode(t, nil, resp.ErrorCode)
	requireCode(t, nil, resp.Topics[0].Partitions[0].ErrorCode)
	s := q.states("t")[0]
	require.Equal(t, ids(2, 3, 4, 1), s.Replicas)
	require.Equal(t, ids(4), s.Adding)
	require.Equal(t, ids(1), s.Removing)
	require.True(t, q.hosted("t", 0), "node 1 serves it until the move completes")

	l := q.listReassignments()
	requireCode(t, nil, l.ErrorCode)
	require.Len(t, l.Topics, 1)
	require.Len(t, l.Topics[0].Partitions, 1)
	lp := l.Topics[0].Partitions[0]
	require.Equal(t, int32(0), lp.Partition)
	require.Equal(t, ids(2, 3, 4, 1), lp.Replicas)
	require.Equal(t, ids(4), lp.AddingReplicas)
	require.Equal(t, ids(1), lp.RemovingReplicas)

	bad := q.do(reassignReq(0, "t", map[int32][]int32{1: {}, 2: {1}}, 1, 2)).(*kmsg.AlterPartitionAssignmentsResponse)
	requireCode(t, kerr.InvalidReplicaAssignment, bad.Topics[0].Partitions[0].ErrorCode)
	requireCode(t, kerr.UnknownTopicOrPartition, bad.Topics[0].Partitions[1].ErrorCode)
	for _, target := range [][]int32{{1, 1, 2}, {1, 2, 9}, {1, 2, 5}} {
		r := q.do(reassignReq(1, "t", map[int32][]int32{1: target}, 1)).(*kmsg.AlterPartitionAssignmentsResponse)
		requireCode(t, kerr.InvalidReplicaAssignment, r.Topics[0].Partitions[0].ErrorCode,
			"%v", target)
		require.NotEmpty(t, deref(r.Topics[0].Partitions[0].ErrorMessage))
	}
	fixed := reassignReq(1, "t", map[int32][]int32{1: {1, 2}}, 1)
	fixed.AllowReplicationFactorChange = false
	r := q.do(fixed).(*kmsg.AlterPartitionAssignmentsResponse)
	requireCode(t, kerr.InvalidReplicationFactor, r.Topics[0].Partitions[0].ErrorCode)
	none := q.do(reassignReq(0, "t", map[int32][]int32{1: nil}, 1)).(*kmsg.AlterPartitionAssignmentsResponse)
	requireCode(t, kerr.NoReassignmentInProgress, none.Topics[0].Partitions[0].ErrorCode)

	cancel := q.do(reassignReq(0, "t", map[int32][]int32{0: nil}, 0)).(*kmsg.AlterPartitionAssignmentsResponse)
	requireCode(t, nil, cancel.Topics[0].Partitions[0].ErrorCode)
	s = q.states("t")[0]
	require.ElementsMatch(t, ids(1, 2, 3), s.Replicas)
	require.Empty(t, s.Adding)
	require.Empty(t, q.listReassignments().Topics)
	for _, op := range q.b.Pending() {
		require.NotEqual(t, PendingController, op.Kind, "nothing waits: %v", op)
	}
}

// A quorum node that is not the active controller answers both APIs NOT_CONTROLLER,
// which clients retry at the controller.
func TestQuorumReassignmentsOnANonControllerNode(t *testing.T) {
	q := newQuorumHarness(t, 2, 3)
	r := q.do(reassignReq(0, "t", map[int32][]int32{0: {1}}, 0)).(*kmsg.AlterPartitionAssignmentsResponse)
	requireCode(t, kerr.NotController, r.ErrorCode)
	requireCode(t, kerr.NotController, r.Topics[0].Partitions[0].ErrorCode)
	requireCode(t, kerr.NotController, q.listReassignments().ErrorCode)
	require.Empty(t, q.takeRemote())
}

// A node without a metadata quorum moves nothing.
func TestReassignmentsWithoutAQuorum(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	r := h.do(reassignReq(0, "t", map[int32][]int32{0: {1}, 1: {1}}, 0, 1)).(*kmsg.AlterPartitionAssignmentsResponse)
	requireCode(t, kerr.InvalidReplicaAssignment, r.Topics[0].Partitions[0].ErrorCode)
	requireCode(t, kerr.UnknownTopicOrPartition, r.Topics[0].Partitions[1].ErrorCode)
	l := h.listReassignments()
	requireCode(t, nil, l.ErrorCode)
	require.Empty(t, l.Topics)
}

// reassignedTopic is node id's harness with topic r's one partition on [1 2 3] led by 1
// (acks=1 records a, b written there), then a reassignment to [2 3 4] started.
func reassignedTopic(t *testing.T, id int32) *harness {
	h := newNodeHarness(t, id)
	h.commitAll(registerRecords(1, 2, 3, 4)...)
	h.commitAll(assignedTopicRecord("r", nil, pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)))
	if id == 1 {
		requireCode(t, nil, producePart(t, h.do(produceReq(1, "r", 0,
			values("a", "b")))).ErrorCode)
	}
	start := pstate(ids(2, 3, 4, 1), ids(1, 2, 3), 1, 0, 1)
	start.Adding, start.Removing = ids(4), ids(1)
	h.commitAll(changeRecord("r", 0, start))
	return h
}

// completion is the record that ends the move of reassignedTopic: [2 3 4], 2 leads.
// (partition epoch pe).
func completion(pe int32) meta.Record {
	return changeRecord("r", 0, pstate(ids(2, 3, 4), ids(2, 3), 2, 1, pe))
}

// The leader keeps serving while a reassignment adds a replica: the adding replica's
// fetches are served and, caught up, it is proposed for the ISR. When the move
// completes without it, the leaving replica stops serving and its log is removed.
func TestAReplicaMovedOffByAReassignmentStopsAndRemovesItsLog(t *testing.T) {
	h := reassignedTopic(t, 1)
	rep := h.b.replicas[tp("r", 0)]
	require.False(t, rep.Follower(), "node 1 still leads")
	requireCode(t, nil, producePart(t, h.do(produceReq(1, "r", 0, values("c")))).ErrorCode)

	f := fetchOne(t, h.do(followerFetch(4, "r", 0, 0, -1, 0, 0)))
	requireCode(t, nil, f.ErrorCode, "the adding replica is served")
	require.NotEmpty(t, f.RecordBatches)
	fetchOne(t, h.do(followerFetch(4, "r", 0, rep.EndOffset(), 0, 0, 0)))
	var asked []int32
	for _, p := range h.takePeer() {
		if _, ok := p.Msg.(*kmsg.AlterPartitionRequest); ok {
			_, ap := alterRequest(t, p)
			asked = ap.NewISR
		}
	}
	require.Equal(t, ids(1, 2, 3, 4), asked, "caught up: proposed for the ISR")

	grown := pstate(ids(2, 3, 4, 1), ids(1, 2, 3, 4), 1, 0, 2)
	grown.Adding, grown.Removing = ids(4), ids(1)
	h.commitAll(changeRecord("r", 0, grown))
	h.commitAll(completion(3))
	require.False(t, h.hosted("r", 0))
	require.Contains(t, h.env.removed, tp("r", 0), "the log is removed")
	require.NotContains(t, h.env.logs, tp("r", 0))
	pr := producePart(t, h.do(produceReq(1, "r", 0, values("d"))))
	requireCode(t, kerr.NotLeaderForPartition, pr.ErrorCode)
	requireCode(t, kerr.NotLeaderForPartition,
		fetchOne(t, h.do(followerFetch(2, "r", 0, 0, -1, 1, 0))).ErrorCode)
	h.restart()
	require.False(t, h.hosted("r", 0), "a restart does not bring it back")
	require.NotContains(t, h.env.logs, tp("r", 0))
}

// A crash after the completion committed and before this node applied it: the replay
// removes the leaving replica's log; a replica that stays keeps its log and leads.
func TestACrashBeforeTheCompletionIsAppliedIsSafe(t *testing.T) {
	h := reassignedTopic(t, 1)
	h.env.committed = append(h.env.committed, completion(2)) // committed, not applied
	h.crash()
	require.False(t, h.hosted("r", 0))
	require.Contains(t, h.env.removed, tp("r", 0))
	require.NotContains(t, h.env.logs, tp("r", 0))

	k := reassignedTopic(t, 2)
	k.commitAll(changeRecord("r", 0, pstate(ids(2, 3, 4, 1), ids(1, 2, 3), 1, 0, 2)))
	rep := k.b.replicas[tp("r", 0)]
	require.NotNil(t, rep)
	k.env.committed = append(k.env.committed, changeRecord("r", 0,
		pstate(ids(2, 3, 4), ids(2, 3), 2, 1, 3)))
	k.crash()
	require.True(t, k.hosted("r", 0), "the staying replica keeps its partition")
	require.Empty(t, k.env.removed)
	require.False(t, k.b.replicas[tp("r", 0)].Follower(), "and leads it")
}
