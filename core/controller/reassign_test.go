package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

var tp0 = core.TopicPartition{Topic: "t", Partition: 0}

// reassignCluster is 5 live brokers and topic t with one partition on [1 2 3], led by 1.
func reassignCluster(t *testing.T) (*harness, map[int32]int64) {
	h := newHarness(t, testConfig(), 1)
	h.settle()
	epochs := h.cluster(5, 0)
	id := h.ask(CreateTopic{Name: "t", Assignment: [][]int32{{1, 2, 3}}})
	h.settle()
	require.Zero(t, h.answer(id).ErrCode())
	require.Equal(t, int32(1), h.state("t", 0).Leader)
	return h, epochs
}

// reassign asks for one partition's reassignment (nil replicas: cancel), settles and
// returns the partition's result.
func (h *harness) reassign(tp core.TopicPartition, replicas []int32) ReassignResult {
	id := h.ask(AlterReassignments{Partitions: []Reassignment{{TP: tp, Replicas: replicas,
		Cancel: replicas == nil}}})
	h.settle()
	r := h.answer(id).(AlterReassignmentsResponse)
	require.Zero(h.t, r.Err)
	require.Len(h.t, r.Results, 1)
	return r.Results[0]
}

// expandISR has the partition's leader add id to its ISR, as a caught-up follower.
func (h *harness) expandISR(epochs map[int32]int64, tp core.TopicPartition, id int32) {
	s := h.state(tp.Topic, tp.Partition)
	req := h.ask(AlterPartition{NodeID: s.Leader, BrokerEpoch: epochs[s.Leader],
		Topic: tp.Topic, Partition: tp.Partition, LeaderEpoch: s.LeaderEpoch,
		PartitionEpoch: s.PartitionEpoch, NewISR: append(append([]int32(nil), s.ISR...), id)})
	h.settle()
	require.Zero(h.t, h.answer(req).ErrCode())
}

func TestReassignmentCompletesOnlyOnceTheAddingReplicasAreInTheISR(t *testing.T) {
	h, epochs := reassignCluster(t)
	before := h.state("t", 0)
	require.Zero(t, h.reassign(tp0, []int32{2, 3, 4}).Err)
	s := h.state("t", 0)
	require.Equal(t, []int32{2, 3, 4, 1}, s.Replicas, "the target first, then the leaving")
	require.Equal(t, []int32{4}, s.Adding)
	require.Equal(t, []int32{1}, s.Removing)
	require.Equal(t, before.ISR, s.ISR)
	require.Equal(t, int32(1), s.Leader, "the leader stays until the move completes")
	require.Equal(t, before.LeaderEpoch, s.LeaderEpoch)
	require.Equal(t, before.PartitionEpoch+1, s.PartitionEpoch)

	h.keepAlive(4000, epochs, 1, 2, 3, 4, 5)
	require.Equal(t, []int32{4}, h.state("t", 0).Adding,
		"not complete while the adding replica is outside the ISR")

	h.expandISR(epochs, tp0, 4)
	s = h.state("t", 0)
	require.Equal(t, []int32{2, 3, 4}, s.Replicas)
	require.ElementsMatch(t, []int32{2, 3, 4}, s.ISR)
	require.Empty(t, s.Adding)
	require.Empty(t, s.Removing)
	require.Equal(t, int32(2), s.Leader, "the first of the target in the ISR leads")
	require.Equal(t, before.LeaderEpoch+1, s.LeaderEpoch, "a new leader, a new epoch")
	require.Empty(t, h.env.proposals)
	tps, _ := Reassignments(h.image, nil)
	require.Empty(t, tps)
}

func TestReassignmentKeepsALeaderThatStays(t *testing.T) {
	h, epochs := reassignCluster(t)
	before := h.state("t", 0)
	require.Zero(t, h.reassign(tp0, []int32{1, 2, 4}).Err)
	h.expandISR(epochs, tp0, 4)
	s := h.state("t", 0)
	require.Equal(t, []int32{1, 2, 4}, s.Replicas)
	require.ElementsMatch(t, []int32{1, 2, 4}, s.ISR)
	require.Equal(t, int32(1), s.Leader)
	require.Equal(t, before.LeaderEpoch, s.LeaderEpoch, "no leader change, no new epoch")
}

func TestReassignmentWithinTheReplicasCompletesAtOnce(t *testing.T) {
	h, _ := reassignCluster(t)
	before := h.state("t", 0)
	require.Zero(t, h.reassign(tp0, []int32{3, 2}).Err)
	s := h.state("t", 0)
	require.Equal(t, []int32{3, 2}, s.Replicas)
	require.Equal(t, []int32{2, 3}, s.ISR)
	require.Equal(t, int32(3), s.Leader)
	require.Equal(t, before.LeaderEpoch+1, s.LeaderEpoch)
	require.Equal(t, before.PartitionEpoch+1, s.PartitionEpoch, "one change")
	require.Zero(t, h.reassign(tp0, []int32{3, 2}).Err, "the same again: nothing to do")
	require.Equal(t, s.PartitionEpoch, h.state("t", 0).PartitionEpoch)
}

func TestReassignmentCancelRevertsToTheStableReplicas(t *testing.T) {
	h, epochs := reassignCluster(t)
	require.Equal(t, codeNoReassignment, h.reassign(tp0, nil).Err)
	require.Zero(t, h.reassign(tp0, []int32{4, 5, 1}).Err)
	h.expandISR(epochs, tp0, 4) // 4 joined, 5 has not: still in progress
	s := h.state("t", 0)
	require.Equal(t, []int32{4, 5}, s.Adding)
	require.Contains(t, s.ISR, int32(4))

	require.Zero(t, h.reassign(tp0, nil).Err)
	s = h.state("t", 0)
	require.ElementsMatch(t, []int32{1, 2, 3}, s.Replicas)
	require.ElementsMatch(t, []int32{1, 2, 3}, s.ISR, "the added replica leaves the ISR")
	require.Empty(t, s.Adding)
	require.Empty(t, s.Removing)
	require.Equal(t, int32(1), s.Leader)
	require.Equal(t, codeNoReassignment, h.reassign(tp0, nil).Err)
}

func TestCancelMovesLeadershipOffAnAddedReplica(t *testing.T) {
	h, epochs := reassignCluster(t)
	require.Zero(t, h.reassign(tp0, []int32{4, 5, 1}).Err)
	h.expandISR(epochs, tp0, 4)
	id := h.ask(ElectLeaders{Partitions: []core.TopicPartition{tp0}})
	h.settle()
	require.Zero(t, h.answer(id).(ElectLeadersResponse).Results[0].Err)
	before := h.state("t", 0)
	require.Equal(t, int32(4), before.Leader, "the preferred replica, 4, leads")

	require.Zero(t, h.reassign(tp0, nil).Err)
	s := h.state("t", 0)
	require.NotContains(t, s.Replicas, int32(4))
	require.Contains(t, []int32{1, 2, 3}, s.Leader)
	require.Equal(t, before.LeaderEpoch+1, s.LeaderEpoch)
}

func TestANewReassignmentReplacesTheOneInProgress(t *testing.T) {
	h, epochs := reassignCluster(t)
	require.Zero(t, h.reassign(tp0, []int32{2, 3, 4}).Err)
	require.Zero(t, h.reassign(tp0, []int32{1, 2, 5}).Err)
	s := h.state("t", 0)
	require.NotContains(t, s.Replicas, int32(4), "the first target's new replica is dropped")
	require.Equal(t, []int32{1, 2, 5, 3}, s.Replicas)
	require.Equal(t, []int32{5}, s.Adding)
	require.Equal(t, []int32{3}, s.Removing)
	h.expandISR(epochs, tp0, 5)
	s = h.state("t", 0)
	require.Equal(t, []int32{1, 2, 5}, s.Replicas)
	require.Empty(t, s.Adding)
	require.Equal(t, int32(1), s.Leader)
}

func TestReassignmentTargetsAreChecked(t *testing.T) {
	h, epochs := reassignCluster(t)
	h.keepAlive(10_000, epochs, 1, 2, 3, 4) // 5 is silent: fenced
	b, _ := h.image.Broker(5)
	require.Equal(t, meta.BrokerFenced, b.State)
	for _, bad := range [][]int32{{}, {1, 2, 2}, {1, 2, 9}, {1, 2, 5}} {
		r := h.reassign(tp0, bad)
		require.Equal(t, codeInvalidReplicaAssignment, r.Err, "%v", bad)
		require.NotEmpty(t, r.Message)
	}
	require.Equal(t, codeUnknownTopicPartition,
		h.reassign(core.TopicPartition{Topic: "t", Partition: 1}, []int32{1}).Err)
	require.Equal(t, codeUnknownTopicPartition,
		h.reassign(core.TopicPartition{Topic: "nope"}, []int32{1}).Err)
	id := h.ask(AlterReassignments{Partitions: []Reassignment{{TP: tp0, Replicas: []int32{1}},
		{TP: tp0, Replicas: []int32{2}}}})
	for _, r := range h.answer(id).(AlterReassignmentsResponse).Results {
		require.Equal(t, codeInvalidRequest, r.Err, "a partition named twice")
	}
	require.Empty(t, h.env.proposals)
	require.False(t, Reassigning(h.state("t", 0)))
}

func TestAReassignmentToOneNewReplicaHandsItLeadership(t *testing.T) {
	h, epochs := reassignCluster(t)
	require.Zero(t, h.reassign(tp0, []int32{4}).Err)
	h.expandISR(epochs, tp0, 4)
	s := h.state("t", 0)
	require.Equal(t, []int32{4}, s.Replicas)
	require.Equal(t, []int32{4}, s.ISR)
	require.Equal(t, int32(4), s.Leader)
}

func TestReassignmentRequestsWaitingAreAnsweredNotControllerOnDeactivation(t *testing.T) {
	h, _ := reassignCluster(t)
	id := h.ask(AlterReassignments{Partitions: []Reassignment{{TP: tp0,
		Replicas: []int32{2, 3, 4}}}})
	require.Nil(t, h.answer(id))
	h.notLeaderOne()
	require.Equal(t, codeNotController, h.answer(id).ErrCode())
	id = h.ask(AlterReassignments{Partitions: []Reassignment{{TP: tp0, Replicas: []int32{4}}}})
	require.Equal(t, codeNotController, h.answer(id).ErrCode(), "inactive")
}

func TestReassignmentCompletionsAreBounded(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlight = 2
	h := newHarness(t, cfg, 1)
	h.settle()
	epochs := h.cluster(4, 0)
	assign := make([][]int32, 6)
	for i := range assign {
		assign[i] = []int32{1, 2}
	}
	id := h.ask(CreateTopic{Name: "t", Assignment: assign})
	h.settle()
	require.Zero(t, h.answer(id).ErrCode())
	for p := range int32(6) {
		tp := core.TopicPartition{Topic: "t", Partition: p}
		require.Zero(t, h.reassign(tp, []int32{2, 3}).Err)
		s := h.state("t", p)
		req := h.ask(AlterPartition{NodeID: s.Leader, BrokerEpoch: epochs[s.Leader],
			Topic: "t", Partition: p, LeaderEpoch: s.LeaderEpoch,
			PartitionEpoch: s.PartitionEpoch, NewISR: []int32{1, 2, 3}})
		require.LessOrEqual(t, len(h.c.Pending()), 2)
		for h.commitOne() {
			require.LessOrEqual(t, len(h.c.Pending()), 2)
		}
		require.Zero(t, h.answer(req).ErrCode())
	}
	tps, _ := Reassignments(h.image, nil)
	require.Empty(t, tps)
	for p := range int32(6) {
		require.Equal(t, []int32{2, 3}, h.state("t", p).Replicas)
	}
}

// One request moving many partitions is proposed in bounded steps (MaxInFlight), in
// request order, and answered once every change is.
func TestAReassignmentRequestIsProposedInBoundedSteps(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlight = 2
	h := newHarness(t, cfg, 1)
	h.settle()
	h.cluster(3, 0)
	assign := make([][]int32, 7)
	for i := range assign {
		assign[i] = []int32{1, 2}
	}
	id := h.ask(CreateTopic{Name: "t", Assignment: assign})
	h.settle()
	require.Zero(t, h.answer(id).ErrCode())
	var items []Reassignment
	for p := range int32(7) {
		items = append(items, Reassignment{TP: core.TopicPartition{Topic: "t", Partition: p},
			Replicas: []int32{2, 1}})
	}
	items = append(items, Reassignment{TP: core.TopicPartition{Topic: "t", Partition: 9},
		Replicas: []int32{1}})
	id = h.ask(AlterReassignments{Partitions: items})
	require.Len(t, h.env.proposals, 2)
	var order []int32
	for h.commitOne() {
		require.LessOrEqual(t, len(h.c.Pending()), 2)
		order = append(order, h.log[len(h.log)-1].Partition)
		if len(order) < 7 {
			require.Nil(t, h.answer(id), "answered before every change")
		}
	}
	require.Equal(t, []int32{0, 1, 2, 3, 4, 5, 6}, order)
	r := h.answer(id).(AlterReassignmentsResponse)
	require.Len(t, r.Results, 8)
	for _, res := range r.Results[:7] {
		require.Zero(t, res.Err)
	}
	require.Equal(t, codeUnknownTopicPartition, r.Results[7].Err)
	for p := range int32(7) {
		require.Equal(t, []int32{2, 1}, h.state("t", p).Replicas)
	}
}
