package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// A node restarted over a wiped data directory registers a new storage id. Its ISR
// places are from a log it no longer has: it must not be elected from them, nor be
// unfenced while it holds one (docs/replication.md, "Lost disks"; issue 8).

// registerStorage registers node (incarnation inc, data directory storage) and settles;
// it returns the epoch.
func (h *harness) registerStorage(node int32, inc, storage byte) int64 {
	id := h.ask(RegisterBroker{NodeID: node, Incarnation: [16]byte{inc}, ClusterID: "c",
		Host: "h", Port: 9000 + node, StorageID: [16]byte{storage}})
	h.settle()
	r := h.answer(id).(RegisterBrokerResponse)
	require.Zero(h.t, r.Err)
	return r.BrokerEpoch
}

// storageCluster registers and unfences nodes 1..3, node i with storage id i, and
// creates topic t (3 partitions, 3 replicas).
func storageCluster(t *testing.T, cfg Config) (*harness, map[int32]int64) {
	h := newHarness(t, cfg, 1)
	h.settle()
	epochs := map[int32]int64{}
	for i := int32(1); i <= 3; i++ {
		epochs[i] = h.registerStorage(i, 1, byte(i))
		h.beat(i, epochs[i])
	}
	require.Zero(t, h.createTopic("t", 3, 3).Err)
	return h, epochs
}

// The sequence: nodes 1 and 2 restart (their new processes register with the
// same storage) while node 3's old process is the only live one, so the ISRs shrink to
// [3]; then node 3's machine comes back with an empty disk. Its registration must not
// let it lead from ISR [3]: it stays fenced, and the partitions stay without a leader
// (their acknowledged records are on no live log a clean election could pick).
func TestAWipedLastISRMemberIsNotUnfencedNorElected(t *testing.T) {
	h, epochs := storageCluster(t, testConfig())
	h.keepAlive(10000, epochs, 3) // 1 and 2 silent: fenced, ISRs shrink to [3]
	for p := range int32(3) {
		s := h.state("t", p)
		require.Equal(t, []int32{3}, s.ISR, "partition %d", p)
		require.Equal(t, int32(3), s.Leader, "partition %d", p)
	}
	epochs[1] = h.registerStorage(1, 2, 1)
	epochs[2] = h.registerStorage(2, 2, 2)
	// Node 3's process dies: its connection closes, the grace passes, it is fenced.
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 3, BrokerEpoch: epochs[3]})
	h.keepAlive(1500, epochs, 1, 2)
	require.Equal(t, meta.BrokerFenced, h.brokerState(3))
	for p := range int32(3) {
		s := h.state("t", p)
		require.Equal(t, meta.NoLeader, s.Leader, "partition %d", p)
		require.Equal(t, []int32{3}, s.ISR, "the ISR waits for its last member")
	}
	// Its machine comes back with an empty disk: a new storage id.
	epochs[3] = h.registerStorage(3, 2, 9)
	b, _ := h.image.Broker(3)
	require.True(t, b.StorageLost)
	for range 3 {
		require.True(t, h.beat(3, epochs[3]).Fenced)
		h.keepAlive(100, epochs, 1, 2, 3)
	}
	require.Equal(t, meta.BrokerFenced, h.brokerState(3),
		"a wiped broker holding an ISR place is not unfenced")
	for p := range int32(3) {
		require.Equal(t, meta.NoLeader, h.state("t", p).Leader, "partition %d", p)
	}
	// The same node restarted with its disk intact would have led again cleanly.
	h2, e2 := storageCluster(t, testConfig())
	h2.keepAlive(10000, e2, 3)
	h2.c.Step(h2.now, BrokerConnectionClosed{NodeID: 3, BrokerEpoch: e2[3]})
	h2.keepAlive(1500, e2)
	e2[3] = h2.registerStorage(3, 2, 3)
	h2.beat(3, e2[3])
	h2.beat(3, e2[3])
	require.Equal(t, meta.BrokerUnfenced, h2.brokerState(3))
	require.Equal(t, int32(3), h2.state("t", 0).Leader)
}

// With unclean.leader.election.enable the partition comes back without the wiped
// broker: another replica leads alone, and the wiped broker, in no ISR now, is
// unfenced and rejoins as a follower.
func TestAWipedLastISRMemberIsUnfencedAfterAnUncleanElection(t *testing.T) {
	cfg := testConfig()
	cfg.UncleanLeaderElection = true
	h, epochs := storageCluster(t, cfg)
	h.keepAlive(10000, epochs, 3)
	epochs[1] = h.registerStorage(1, 2, 1)
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 3, BrokerEpoch: epochs[3]})
	h.keepAlive(1500, epochs, 1)
	epochs[3] = h.registerStorage(3, 2, 9)
	h.keepAlive(100, epochs, 1, 3)
	h.beat(3, epochs[3])
	for p := range int32(3) {
		s := h.state("t", p)
		require.Equal(t, int32(1), s.Leader, "partition %d", p)
		require.Equal(t, []int32{1}, s.ISR, "partition %d", p)
	}
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(3))
	b, _ := h.image.Broker(3)
	require.False(t, b.StorageLost, "cleared when unfenced")
}

// A wiped broker that is one of several ISR members leaves the ISR at once, and is
// unfenced only then; restarting again before it was unfenced (same new storage) keeps
// it marked lost.
func TestAWipedBrokerLeavesTheISRBeforeItIsUnfenced(t *testing.T) {
	h, epochs := storageCluster(t, testConfig())
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 3, BrokerEpoch: epochs[3]})
	h.keepAlive(1500, epochs, 1, 2)
	epochs[3] = h.registerStorage(3, 2, 9)
	h.keepAlive(10000, epochs, 1, 2) // it dies again, fenced: a session to register again
	epochs[3] = h.registerStorage(3, 3, 9)
	b, _ := h.image.Broker(3)
	require.True(t, b.StorageLost, "not caught up since its disk was lost")
	h.beat(3, epochs[3])
	h.beat(3, epochs[3])
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(3))
	for p := range int32(3) {
		s := h.state("t", p)
		require.NotContains(t, s.ISR, int32(3), "partition %d", p)
		require.NotEqual(t, int32(3), s.Leader, "partition %d", p)
	}
}

func TestStorageLost(t *testing.T) {
	im := meta.NewImage()
	reg := func(id int32, epoch int64, storage byte, lost bool) {
		require.NoError(t, im.Apply(meta.Record{Kind: meta.KindBrokerRegistered, NodeID: id,
			Incarnation: [16]byte{byte(epoch)}, BrokerEpoch: epoch, Host: "h", Port: 1,
			BrokerState: meta.BrokerFenced, StorageID: [16]byte{storage}, StorageLost: lost}))
	}
	require.False(t, StorageLost(im, 1, [16]byte{1}), "a first registration")
	reg(1, 1, 0, false)
	require.False(t, StorageLost(im, 1, [16]byte{1}), "the old one said nothing")
	reg(1, 2, 1, false)
	require.False(t, StorageLost(im, 1, [16]byte{1}), "the same directory")
	require.True(t, StorageLost(im, 1, [16]byte{2}), "another directory")
	require.True(t, StorageLost(im, 1, [16]byte{}), "unknown after a known one")
	reg(1, 3, 2, true)
	require.True(t, StorageLost(im, 1, [16]byte{2}), "not unfenced since it was lost")
	require.NoError(t, im.Apply(meta.Record{Kind: meta.KindBrokerChange, NodeID: 1,
		BrokerEpoch: 3, BrokerState: meta.BrokerUnfenced}))
	require.False(t, StorageLost(im, 1, [16]byte{2}), "unfenced: its ISR places are new")
}

// When no ISR member is eligible, members that lost their storage leave the ISR if
// others remain; an ISR of lost members only is kept, without a leader.
func TestRepairDropsLostMembersOfAnIneligibleISR(t *testing.T) {
	lost := only(3)
	next, unclean, changed := RepairLost(st(3, []int32{1, 2, 3}, 1, 2, 3), lostOnly(only(), lost), false)
	require.True(t, changed)
	require.False(t, unclean)
	require.Equal(t, []int32{1, 2}, next.ISR)
	require.Equal(t, meta.NoLeader, next.Leader)
	next, _, _ = RepairLost(st(3, []int32{3}, 1, 2, 3), lostOnly(only(3), lost), false)
	require.Equal(t, []int32{3}, next.ISR)
	require.Equal(t, int32(3), next.Leader, "eligible: not lost (it was unfenced since)")
	next, _, _ = RepairLost(st(3, []int32{3}, 1, 2, 3), lostOnly(only(1), lost), false)
	require.Equal(t, []int32{3}, next.ISR, "an ISR is never empty")
	require.Equal(t, meta.NoLeader, next.Leader)
	next, unclean, _ = RepairLost(st(3, []int32{3}, 1, 2, 3), lostOnly(only(1), lost), true)
	require.True(t, unclean)
	require.Equal(t, []int32{1}, next.ISR)
}

func lostOnly(eligible, lost func(int32) bool) Standing {
	return Standing{Eligible: eligible, Lost: lost, Heard: func(int32) bool { return true }}
}

// A newly active controller has heard from no broker: the old registrations are
// unfenced on the session it assumed. Nodes 1 and 2 restart (registering again, with
// their disks) while node 3's old process is silent: its process is in fact gone,
// over a wiped disk. The ISRs must not shrink to [3] nor elect it; when node 3's new
// process registers, its lost storage takes it out, and 1 and 2 lead again.
func TestTheISRDoesNotShrinkToABrokerTheControllerHasNotHeardFrom(t *testing.T) {
	h, epochs := storageCluster(t, testConfig())
	h.epoch++
	h.c.Step(h.now, LeaderChanged{Leader: 2, Epoch: h.epoch})
	h.notLeaderOne()
	h.lead()
	h.settle()
	before := map[int32]meta.PartitionState{}
	for p := range int32(3) {
		before[p] = h.state("t", p)
	}
	epochs[1] = h.registerStorage(1, 2, 1)
	epochs[2] = h.registerStorage(2, 2, 2)
	for p := range int32(3) {
		s := h.state("t", p)
		require.Len(t, s.ISR, 3, "partition %d: no heard member to shrink to", p)
		if before[p].Leader == 3 {
			require.Equal(t, before[p].LeaderEpoch, s.LeaderEpoch, "not elected again")
		} else {
			require.Equal(t, meta.NoLeader, s.Leader, "partition %d", p)
		}
	}
	epochs[3] = h.registerStorage(3, 2, 9)
	h.keepAlive(200, epochs, 1, 2, 3)
	for p := range int32(3) {
		s := h.state("t", p)
		require.NotContains(t, s.ISR, int32(3), "partition %d", p)
		require.Contains(t, []int32{1, 2}, s.Leader, "partition %d", p)
	}
}

// Once it heartbeats, a broker the new controller had not heard from may take the ISR
// places and leadership the others left.
func TestAHeardBrokerIsElectedAfterAControllerChange(t *testing.T) {
	h, epochs := storageCluster(t, testConfig())
	h.epoch++
	h.c.Step(h.now, LeaderChanged{Leader: 2, Epoch: h.epoch})
	h.notLeaderOne()
	h.lead()
	h.settle()
	epochs[1] = h.registerStorage(1, 2, 1)
	epochs[2] = h.registerStorage(2, 2, 2)
	h.beat(3, epochs[3])
	for p := range int32(3) {
		s := h.state("t", p)
		require.Equal(t, []int32{3}, s.ISR, "partition %d", p)
		require.Equal(t, int32(3), s.Leader, "partition %d", p)
	}
}

// A member that lost its storage leaves the ISR even while the partition waits for an
// eligible member to be heard from.
func TestALostMemberLeavesAnISRWaitingForAnUnheardMember(t *testing.T) {
	next, _, changed := RepairLost(st(1, []int32{1, 2, 3}, 1, 2, 3), Standing{
		Eligible: only(2), Lost: only(3), Heard: only()}, false)
	require.True(t, changed)
	require.Equal(t, []int32{1, 2}, next.ISR, "1 waits with 2; 3 goes")
	require.Equal(t, meta.NoLeader, next.Leader, "2 is not heard from yet")
	next, _, _ = RepairLost(st(1, []int32{1, 2, 3}, 1, 2, 3), Standing{
		Eligible: only(2), Lost: only(3), Heard: only(2)}, false)
	require.Equal(t, []int32{2}, next.ISR)
	require.Equal(t, int32(2), next.Leader)
}

// An operator's unclean election (ElectLeaders, election type 1) brings back the
// partitions whose every ISR member is gone, as unclean.leader.election.enable would,
// partition by partition: another live replica leads alone. A partition with an
// eligible leader needs none, and the wiped broker is unfenced once it holds no ISR
// place (the harsh disk-loss world's seed 20 needs this way out; docs/simulation.md).
func TestAnUncleanElectLeadersBringsBackAPartitionWithoutISR(t *testing.T) {
	h, epochs := storageCluster(t, testConfig())
	h.keepAlive(10000, epochs, 3)
	epochs[1] = h.registerStorage(1, 2, 1)
	epochs[2] = h.registerStorage(2, 2, 2)
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 3, BrokerEpoch: epochs[3]})
	h.keepAlive(1500, epochs, 1, 2)
	epochs[3] = h.registerStorage(3, 2, 9)
	h.keepAlive(100, epochs, 1, 2, 3)
	tp := func(p int32) core.TopicPartition { return core.TopicPartition{Topic: "t", Partition: p} }
	require.Equal(t, meta.NoLeader, h.state("t", 0).Leader)

	id := h.ask(ElectLeaders{Partitions: []core.TopicPartition{tp(0)}})
	h.settle()
	require.Equal(t, codePreferredNotAvailable, h.answer(id).(ElectLeadersResponse).Results[0].Err,
		"a preferred election does not reach outside the ISR")
	id = h.ask(ElectLeaders{Partitions: []core.TopicPartition{tp(0)}, Unclean: true})
	h.settle()
	require.Equal(t, []ElectResult{{TP: tp(0)}}, h.answer(id).(ElectLeadersResponse).Results)
	s := h.state("t", 0)
	require.Contains(t, []int32{1, 2}, s.Leader)
	require.Equal(t, []int32{s.Leader}, s.ISR, "the new leader alone in the ISR")
	require.Equal(t, meta.NoLeader, h.state("t", 1).Leader, "only the partition asked")
	require.Equal(t, meta.BrokerFenced, h.brokerState(3), "still in two ISRs")

	id = h.ask(ElectLeaders{Partitions: []core.TopicPartition{tp(0), tp(1), tp(2)},
		Unclean: true})
	h.settle()
	require.Equal(t, []ElectResult{{TP: tp(0), Err: codeElectionNotNeeded}, {TP: tp(1)},
		{TP: tp(2)}}, h.answer(id).(ElectLeadersResponse).Results)
	h.keepAlive(100, epochs, 1, 2, 3)
	h.beat(3, epochs[3])
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(3), "in no ISR now")

	// Every replica gone: nothing can lead.
	h2, e2 := storageCluster(t, testConfig())
	h2.c.Step(h2.now, BrokerConnectionClosed{NodeID: 3, BrokerEpoch: e2[3]})
	h2.keepAlive(10000, e2)
	id = h2.ask(ElectLeaders{Partitions: []core.TopicPartition{tp(0)}, Unclean: true})
	h2.settle()
	require.Equal(t, codeNoEligibleLeader, h2.answer(id).(ElectLeadersResponse).Results[0].Err)
}
