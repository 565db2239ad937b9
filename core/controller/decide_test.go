package controller

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

func only(ids ...int32) func(int32) bool {
	return func(id int32) bool {
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	}
}

func st(leader int32, isr []int32, replicas ...int32) meta.PartitionState {
	return meta.PartitionState{Replicas: replicas, ISR: isr, Leader: leader, LeaderEpoch: 4,
		PartitionEpoch: 7}
}

func TestRepairElectsFromTheISRInReplicaOrder(t *testing.T) {
	s := st(1, []int32{1, 3, 2}, 1, 2, 3)
	next, unclean, changed := Repair(s, only(2, 3), false)
	require.True(t, changed)
	require.False(t, unclean)
	require.Equal(t, int32(2), next.Leader, "replica order, not ISR order")
	require.Equal(t, []int32{3, 2}, next.ISR)
	require.Equal(t, int32(5), next.LeaderEpoch)
	require.Equal(t, int32(8), next.PartitionEpoch)
}

func TestRepairShrinksTheISRKeepingTheLeader(t *testing.T) {
	next, _, changed := Repair(st(1, []int32{1, 2, 3}, 1, 2, 3), only(1, 2), false)
	require.True(t, changed)
	require.Equal(t, int32(1), next.Leader)
	require.Equal(t, int32(4), next.LeaderEpoch, "same leader, same leader epoch")
	require.Equal(t, []int32{1, 2}, next.ISR)
	_, _, changed = Repair(st(1, []int32{1, 2}, 1, 2, 3), only(1, 2), false)
	require.False(t, changed, "3 is not in the ISR: nothing to do")
}

func TestRepairLeavesAPartitionLeaderlessWithoutAnEligibleISRMember(t *testing.T) {
	next, unclean, changed := Repair(st(1, []int32{1, 2}, 1, 2, 3), only(3), false)
	require.True(t, changed)
	require.False(t, unclean)
	require.Equal(t, meta.NoLeader, next.Leader)
	require.Equal(t, []int32{1, 2}, next.ISR, "kept: either may lead cleanly again")
	require.NoError(t, next.Check())
	_, _, changed = Repair(next, only(3), false)
	require.False(t, changed, "stays leaderless")
	back, _, changed := Repair(next, only(2, 3), false)
	require.True(t, changed)
	require.Equal(t, int32(2), back.Leader, "an ISR member returns and leads")
	require.Equal(t, []int32{2}, back.ISR)
}

func TestRepairUncleanElectsALiveReplicaAlone(t *testing.T) {
	next, unclean, changed := Repair(st(1, []int32{1, 2}, 1, 2, 3), only(3), true)
	require.True(t, changed)
	require.True(t, unclean)
	require.Equal(t, int32(3), next.Leader)
	require.Equal(t, []int32{3}, next.ISR)
	_, unclean, _ = Repair(st(1, []int32{1, 2}, 1, 2, 3), only(2, 3), true)
	require.False(t, unclean, "an ISR member is eligible: a clean election")
}

func TestPreferredElection(t *testing.T) {
	next, ok, _ := Preferred(st(2, []int32{1, 2}, 1, 2), only(1, 2))
	require.True(t, ok)
	require.Equal(t, int32(1), next.Leader)
	require.Equal(t, int32(5), next.LeaderEpoch)
	_, ok, code := Preferred(st(1, []int32{1, 2}, 1, 2), only(1, 2))
	require.False(t, ok)
	require.Equal(t, codeElectionNotNeeded, code)
	_, ok, code = Preferred(st(2, []int32{2}, 1, 2), only(1, 2))
	require.False(t, ok, "the preferred replica is not in the ISR")
	require.Equal(t, codePreferredNotAvailable, code)
	_, ok, _ = Preferred(st(2, []int32{1, 2}, 1, 2), only(2))
	require.False(t, ok, "the preferred replica is fenced")
}

func brokers(racks ...string) []meta.Broker {
	out := make([]meta.Broker, len(racks))
	for i, r := range racks {
		out[i] = meta.Broker{ID: int32(i + 1), Rack: r, State: meta.BrokerUnfenced}
	}
	return out
}

func TestPlaceRefusesMoreReplicasThanBrokers(t *testing.T) {
	_, code, msg := Place(brokers("", ""), 1, 3, rand.New(rand.NewSource(1)))
	require.Equal(t, codeInvalidReplication, code)
	require.Contains(t, msg, "only 2 broker(s) are live")
	_, code, _ = Place(brokers("", ""), 1, 0, rand.New(rand.NewSource(1)))
	require.Equal(t, codeInvalidReplication, code)
	_, code, _ = Place(brokers("", ""), 0, 1, rand.New(rand.NewSource(1)))
	require.Equal(t, codeInvalidPartitions, code)
}

func TestPlaceSpreadsLeadersAndReplicas(t *testing.T) {
	a, code, _ := Place(brokers("", "", ""), 6, 2, rand.New(rand.NewSource(3)))
	require.Zero(t, code)
	leaders, replicas := map[int32]int{}, map[int32]int{}
	for _, rs := range a {
		require.Len(t, rs, 2)
		require.NotEqual(t, rs[0], rs[1])
		leaders[rs[0]]++
		for _, r := range rs {
			replicas[r]++
		}
	}
	require.Equal(t, map[int32]int{1: 2, 2: 2, 3: 2}, leaders)
	require.Equal(t, map[int32]int{1: 4, 2: 4, 3: 4}, replicas)
}

func TestPlaceUsesDistinctRacks(t *testing.T) {
	// Racks x: 1, 2, 3; y: 4. Every partition of RF 2 has one replica in each rack.
	a, _, _ := Place(brokers("x", "x", "x", "y"), 8, 2, rand.New(rand.NewSource(5)))
	for _, rs := range a {
		require.True(t, (rs[0] == 4) != (rs[1] == 4), "%v: one replica on rack y", rs)
	}
}

func TestPlaceStartsAtARandomBroker(t *testing.T) {
	firsts := map[int32]bool{}
	for seed := range int64(20) {
		a, _, _ := Place(brokers("", "", ""), 1, 1, rand.New(rand.NewSource(seed)))
		firsts[a[0][0]] = true
	}
	require.Len(t, firsts, 3)
}

func TestDecideRegister(t *testing.T) {
	im := meta.NewImage()
	require.NoError(t, im.Apply(meta.Record{Kind: meta.KindClusterCreated, ClusterID: "c"}))
	now := core.Time(100e9)
	req := RegisterBroker{NodeID: 1, Incarnation: [16]byte{1}, ClusterID: "other"}
	decide := func(im *meta.Image, cluster string, c Contacts) Registration {
		return DecideRegister(im, cluster, c, now, 9000, im.MaxBrokerEpoch()+1, req)
	}
	d := decide(im, "c", Contacts{})
	require.Equal(t, codeInconsistentClusterID, d.Answer.Err)
	d = decide(meta.NewImage(), "mine", Contacts{})
	require.Equal(t, codeInconsistentClusterID, d.Answer.Err, "before ClusterCreated: own id")

	req.ClusterID = "c"
	d = decide(im, "c", Contacts{})
	require.True(t, d.Propose)
	require.Equal(t, int64(1), d.Record.BrokerEpoch)
	require.Equal(t, meta.BrokerFenced, d.Record.BrokerState)
	require.NoError(t, im.Apply(d.Record))

	d = decide(im, "c", Contacts{1: now})
	require.False(t, d.Propose, "a retry of the same incarnation")
	require.Equal(t, RegisterBrokerResponse{BrokerEpoch: 1}, d.Answer)

	req.Incarnation = [16]byte{2}
	d = decide(im, "c", Contacts{1: now.AddMillis(-8999)})
	require.Equal(t, codeDuplicateRegistration, d.Answer.Err, "the old process is alive")
	d = decide(im, "c", Contacts{1: now.AddMillis(-9000)})
	require.True(t, d.Propose, "the old process went silent for a session")
	require.Equal(t, int64(2), d.Record.BrokerEpoch)
	require.NoError(t, im.Apply(meta.Record{Kind: meta.KindBrokerChange, NodeID: 1,
		BrokerEpoch: 1, BrokerState: meta.BrokerShuttingDown}))
	d = decide(im, "c", Contacts{1: now})
	require.True(t, d.Propose, "the old process is shutting down: its restart goes in")
}

func TestDecideHeartbeat(t *testing.T) {
	im := meta.NewImage()
	require.NoError(t, im.Apply(meta.Record{Kind: meta.KindBrokerRegistered, NodeID: 1,
		BrokerEpoch: 3}))
	require.Equal(t, codeNotRegistered, DecideHeartbeat(im, 5, Heartbeat{NodeID: 2}).Answer.Err)
	b := DecideHeartbeat(im, 5, Heartbeat{NodeID: 1, BrokerEpoch: 2, MetadataIndex: 9})
	require.Equal(t, codeStaleBrokerEpoch, b.Answer.Err)
	require.False(t, b.Valid)
	b = DecideHeartbeat(im, 5, Heartbeat{NodeID: 1, BrokerEpoch: 3, MetadataIndex: 4})
	require.True(t, b.Valid && b.Answer.Fenced)
	require.False(t, b.Propose, "not caught up with its own registration")
	b = DecideHeartbeat(im, 5, Heartbeat{NodeID: 1, BrokerEpoch: 3, MetadataIndex: 5,
		WantFence: true})
	require.False(t, b.Propose, "asks to stay fenced")
	b = DecideHeartbeat(im, 5, Heartbeat{NodeID: 1, BrokerEpoch: 3, MetadataIndex: 5})
	require.True(t, b.Propose)
	require.Equal(t, meta.BrokerUnfenced, b.Record.BrokerState)
}

func alterImage(t *testing.T) *meta.Image {
	im := meta.NewImage()
	for id := int32(1); id <= 4; id++ {
		require.NoError(t, im.Apply(meta.Record{Kind: meta.KindBrokerRegistered, NodeID: id,
			BrokerEpoch: int64(id), BrokerState: meta.BrokerUnfenced}))
	}
	require.NoError(t, im.Apply(meta.Record{Kind: meta.KindBrokerChange, NodeID: 4,
		BrokerEpoch: 4, BrokerState: meta.BrokerFenced}))
	s := st(1, []int32{1, 2}, 1, 2, 3, 4)
	s.LeaderEpoch, s.PartitionEpoch = 0, 0
	require.NoError(t, im.Apply(meta.Record{Kind: meta.KindTopicCreated, Topic: "t",
		Partitions: 1, PartitionStates: []meta.PartitionState{s}}))
	return im
}

func TestDecideAlterPartitionCodes(t *testing.T) {
	im := alterImage(t)
	ok := AlterPartition{NodeID: 1, BrokerEpoch: 1, Topic: "t", NewISR: []int32{1, 2, 3}}
	for _, c := range []struct {
		name string
		edit func(*AlterPartition)
		code int16
	}{
		{"ok", func(*AlterPartition) {}, 0},
		{"stale broker epoch", func(r *AlterPartition) { r.BrokerEpoch = 9 }, codeStaleBrokerEpoch},
		{"unregistered", func(r *AlterPartition) { r.NodeID = 7 }, codeNotRegistered},
		{"unknown partition", func(r *AlterPartition) { r.Partition = 1 },
			codeUnknownTopicPartition},
		{"newer leader epoch", func(r *AlterPartition) { r.LeaderEpoch = 1 }, codeNotController},
		{"newer partition epoch", func(r *AlterPartition) { r.PartitionEpoch = 1 },
			codeNotController},
		{"not the leader", func(r *AlterPartition) { r.NodeID, r.BrokerEpoch = 2, 2 },
			codeInvalidRequest},
		{"resigns to a non-member", func(r *AlterPartition) { r.NewISR = []int32{2, 3} },
			codeInvalidRequest},
		{"empty", func(r *AlterPartition) { r.NewISR = nil }, codeInvalidRequest},
		{"not a replica", func(r *AlterPartition) { r.NewISR = []int32{1, 5} },
			codeInvalidRequest},
		{"fenced member", func(r *AlterPartition) { r.NewISR = []int32{1, 4} },
			codeIneligibleReplica},
	} {
		r := ok
		c.edit(&r)
		_, _, code, why := DecideAlterPartition(im, r, Eligible(im))
		require.Equal(t, c.code, code, "%s: %s", c.name, why)
	}
	rec, change, _, _ := DecideAlterPartition(im, ok, Eligible(im))
	require.True(t, change)
	require.Equal(t, int32(1), rec.State.PartitionEpoch)
	require.Equal(t, int32(0), rec.State.LeaderEpoch)
	require.NoError(t, im.Apply(rec))
	_, _, code, _ := DecideAlterPartition(im, ok, Eligible(im))
	require.Equal(t, codeInvalidUpdateVersion, code, "the same request again: old version")
	same := ok
	same.PartitionEpoch, same.NewISR = 1, []int32{3, 2, 1}
	_, change, code, _ = DecideAlterPartition(im, same, Eligible(im))
	require.False(t, change, "the same set: nothing to commit")
	require.Zero(t, code)
}

func TestFencedLeaderEpochForAnOldLeader(t *testing.T) {
	im := alterImage(t)
	s := st(2, []int32{2}, 1, 2, 3, 4)
	s.LeaderEpoch, s.PartitionEpoch = 1, 1
	require.NoError(t, im.Apply(meta.Record{Kind: meta.KindPartitionChange, Topic: "t",
		State: s}))
	_, _, code, _ := DecideAlterPartition(im, AlterPartition{NodeID: 1, BrokerEpoch: 1,
		Topic: "t", NewISR: []int32{1}}, Eligible(im))
	require.Equal(t, codeFencedLeaderEpoch, code)
}

// TestAnOfflineLeaderResignsToTheISR: an AlterPartition leaving the leader out of the
// ISR is its resignation (its log went offline): the first member of the rest in
// replica order that may be elected leads, in a new leader epoch; a new ISR that is not
// part of the current one is refused, and so is one whose members may not lead.
func TestAnOfflineLeaderResignsToTheISR(t *testing.T) {
	im := meta.NewImage()
	for id := int32(1); id <= 4; id++ {
		require.NoError(t, im.Apply(meta.Record{Kind: meta.KindBrokerRegistered, NodeID: id,
			BrokerEpoch: int64(id), BrokerState: meta.BrokerUnfenced}))
	}
	s := st(1, []int32{1, 3, 4, 2}, 1, 2, 3, 4)
	s.LeaderEpoch, s.PartitionEpoch = 0, 0
	require.NoError(t, im.Apply(meta.Record{Kind: meta.KindTopicCreated, Topic: "t",
		Partitions: 1, PartitionStates: []meta.PartitionState{s}}))
	req := AlterPartition{NodeID: 1, BrokerEpoch: 1, Topic: "t", NewISR: []int32{3, 4, 2}}
	all := Eligible(im)
	rec, change, code, why := DecideAlterPartition(im, req, all)
	require.True(t, change, why)
	require.Zero(t, code)
	require.Equal(t, int32(2), rec.State.Leader, "the first of the rest in replica order")
	require.Equal(t, []int32{3, 4, 2}, rec.State.ISR, "the resigning leader leaves the ISR")
	require.Equal(t, int32(1), rec.State.LeaderEpoch)
	require.Equal(t, int32(1), rec.State.PartitionEpoch)

	not2 := func(id int32) bool { return id != 2 && all(id) }
	rec3, _, _, _ := DecideAlterPartition(im, req, not2)
	require.Equal(t, int32(3), rec3.State.Leader, "2 may not be elected")

	_, change, code, _ = DecideAlterPartition(im, req, func(int32) bool { return false })
	require.False(t, change)
	require.Equal(t, codeIneligibleReplica, code, "no one may lead: the leader asks again")

	bad := req
	bad.NewISR = []int32{3, 3}
	_, _, code, _ = DecideAlterPartition(im, bad, all)
	require.Equal(t, codeInvalidRequest, code, "duplicates")
	bad.NewISR = nil
	_, _, code, _ = DecideAlterPartition(im, bad, all)
	require.Equal(t, codeInvalidRequest, code, "empty")

	require.NoError(t, im.Apply(rec), "the record applies (C9)")
	s2, _, _ := im.Partition("t", 0)
	require.Equal(t, int32(2), s2.Leader)
}
