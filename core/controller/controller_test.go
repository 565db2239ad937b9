package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

func (h *harness) createTopic(name string, parts int32, rf int16) CreateTopicResponse {
	id := h.ask(CreateTopic{Name: name, Partitions: parts, ReplicationFactor: rf})
	h.settle()
	return h.answer(id).(CreateTopicResponse)
}

// keepAlive advances ms in heartbeat-interval steps, every node in alive beating.
func (h *harness) keepAlive(ms int64, epochs map[int32]int64, alive ...int32) {
	for ms > 0 {
		step := min(ms, 2000)
		h.advance(step)
		ms -= step
		for _, id := range alive {
			h.beat(id, epochs[id])
		}
		h.settle()
	}
}

func TestFirstActivationFixesTheClusterID(t *testing.T) {
	h := newHarness(t, testConfig(), 1)
	require.Len(t, h.env.proposals, 1)
	h.settle()
	require.Equal(t, "c", h.image.ClusterID())
	h.lead() // a later activation finds it fixed
	require.Empty(t, h.env.proposals)
}

func TestRegistrationStartsFencedAndAHeartbeatUnfences(t *testing.T) {
	h := newHarness(t, testConfig(), 1)
	h.settle()
	epoch := h.register(1, 1, "")
	b, _ := h.image.Broker(1)
	require.Equal(t, meta.BrokerFenced, b.State)
	r := h.beat(1, epoch)
	require.True(t, r.Fenced, "answered before the unfence committed")
	b, _ = h.image.Broker(1)
	require.Equal(t, meta.BrokerUnfenced, b.State)
	require.False(t, h.beat(1, epoch).Fenced)
	require.Equal(t, epoch, h.register(1, 1, ""), "a retry of the same incarnation")
}

func TestANewIncarnationReplacesASilentOne(t *testing.T) {
	h := newHarness(t, testConfig(), 1)
	h.settle()
	epochs := h.cluster(1, 0)
	id := h.ask(RegisterBroker{NodeID: 1, Incarnation: [16]byte{2}, ClusterID: "c"})
	require.Equal(t, codeDuplicateRegistration, h.answer(id).ErrCode(),
		"the old process heartbeats: two processes claim node 1")
	h.advance(9000) // the old process is silent: fenced, and its id free again
	h.settle()
	b, _ := h.image.Broker(1)
	require.Equal(t, meta.BrokerFenced, b.State)
	epoch := h.register(1, 2, "")
	require.Greater(t, epoch, epochs[1])
	require.Equal(t, codeStaleBrokerEpoch, h.beat(1, epochs[1]).Err)
}

func TestASilentBrokerIsFencedAndLosesLeadership(t *testing.T) {
	h := newHarness(t, testConfig(), 1)
	h.settle()
	epochs := h.cluster(3, 0)
	require.Zero(t, h.createTopic("t", 6, 3).Err)
	h.keepAlive(8000, epochs, 2, 3)
	b, _ := h.image.Broker(1)
	require.Equal(t, meta.BrokerUnfenced, b.State, "8 s of silence: within the session")
	h.keepAlive(2000, epochs, 2, 3)
	b, _ = h.image.Broker(1)
	require.Equal(t, meta.BrokerFenced, b.State)
	for p := range int32(6) {
		s := h.state("t", p)
		require.NotEqual(t, int32(1), s.Leader)
		require.NotContains(t, s.ISR, int32(1))
		require.Len(t, s.ISR, 2)
	}
	require.Zero(t, h.refused)
}

func TestTheLastISRMemberFencedLeavesThePartitionLeaderless(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		cfg := testConfig()
		cfg.UncleanLeaderElection = unclean
		h := newHarness(t, cfg, 1)
		h.settle()
		epochs := h.cluster(2, 0)
		require.Zero(t, h.createTopic("t", 1, 2).Err)
		s := h.state("t", 0)
		// The leader drops the follower from the ISR, then goes silent.
		id := h.ask(AlterPartition{NodeID: s.Leader, BrokerEpoch: epochs[s.Leader],
			Topic: "t", NewISR: []int32{s.Leader}})
		h.settle()
		require.Zero(t, h.answer(id).ErrCode())
		follower := s.Replicas[1]
		h.keepAlive(10000, epochs, follower)
		got := h.state("t", 0)
		if unclean {
			require.Equal(t, follower, got.Leader, "unclean: the live replica leads")
			require.Equal(t, []int32{follower}, got.ISR)
			continue
		}
		require.Equal(t, meta.NoLeader, got.Leader)
		require.Equal(t, []int32{s.Leader}, got.ISR, "kept: it may lead cleanly again")
		// The old leader comes back (a new process) and leads again.
		epoch := h.register(s.Leader, 2, "")
		h.beat(s.Leader, epoch)
		got = h.state("t", 0)
		require.Equal(t, s.Leader, got.Leader)
		require.Equal(t, s.LeaderEpoch+2, got.LeaderEpoch)
	}
}

func TestControlledShutdownMovesLeadershipFirst(t *testing.T) {
	h := newHarness(t, testConfig(), 2)
	h.settle()
	epochs := h.cluster(3, 0)
	require.Zero(t, h.createTopic("t", 6, 2).Err)
	id := h.ask(ControlledShutdown{NodeID: 2, BrokerEpoch: epochs[2]})
	require.Nil(t, h.answer(id), "answered only when done")
	h.commitOne() // the ShuttingDown record
	require.Nil(t, h.answer(id))
	h.settle()
	require.Equal(t, ControlledShutdownResponse{}, h.answer(id))
	for p := range int32(6) {
		s := h.state("t", p)
		require.NotEqual(t, int32(2), s.Leader)
		require.NotContains(t, s.ISR, int32(2))
	}
	b, _ := h.image.Broker(2)
	require.Equal(t, meta.BrokerShuttingDown, b.State)
	for p := range int32(6) { // its leader may not take it back into the ISR
		s := h.state("t", p)
		if !contains(s.Replicas, 2) {
			continue
		}
		id := h.ask(AlterPartition{NodeID: s.Leader, BrokerEpoch: epochs[s.Leader],
			Topic: "t", Partition: p, LeaderEpoch: s.LeaderEpoch,
			PartitionEpoch: s.PartitionEpoch, NewISR: append(s.ISR, 2)})
		require.Equal(t, codeIneligibleReplica, h.answer(id).ErrCode())
	}
	epoch := h.register(2, 2, "")
	require.Greater(t, epoch, epochs[2], "its restart registers at once")
}

func contains(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestAlterPartitionIsAnsweredOnceCommitted(t *testing.T) {
	h := newHarness(t, testConfig(), 3)
	h.settle()
	epochs := h.cluster(3, 0)
	require.Zero(t, h.createTopic("t", 1, 3).Err)
	s := h.state("t", 0)
	req := AlterPartition{NodeID: s.Leader, BrokerEpoch: epochs[s.Leader], Topic: "t",
		NewISR: []int32{s.Leader}}
	first, second := h.ask(req), h.ask(req)
	require.Nil(t, h.answer(first))
	h.settle()
	r := h.answer(first).(AlterPartitionResponse)
	require.Zero(t, r.Err)
	require.Equal(t, []int32{s.Leader}, r.State.ISR)
	require.Equal(t, int32(1), r.State.PartitionEpoch)
	require.Equal(t, codeInvalidUpdateVersion, h.answer(second).ErrCode(),
		"decided against the same version, committed after the first: refused")
	require.Equal(t, 1, h.refused)
}

func TestAutomaticRebalanceMovesLeadersBack(t *testing.T) {
	h := newHarness(t, testConfig(), 4)
	h.settle()
	epochs := h.cluster(2, 0)
	require.Zero(t, h.createTopic("t", 4, 2).Err)
	h.keepAlive(10000, epochs, 2) // 1 is fenced: 2 leads everything
	for p := range int32(4) {
		require.Equal(t, int32(2), h.state("t", p).Leader)
	}
	epochs[1] = h.register(1, 2, "")
	h.beat(1, epochs[1])
	for p := range int32(4) { // 1 rejoins every ISR, as its leader asks
		s := h.state("t", p)
		id := h.ask(AlterPartition{NodeID: 2, BrokerEpoch: epochs[2], Topic: "t",
			Partition: p, LeaderEpoch: s.LeaderEpoch, PartitionEpoch: s.PartitionEpoch,
			NewISR: []int32{1, 2}})
		h.settle()
		require.Zero(t, h.answer(id).ErrCode())
	}
	h.keepAlive(300_000, epochs, 1, 2)
	for p := range int32(4) {
		s := h.state("t", p)
		require.Equal(t, s.Replicas[0], s.Leader, "partition %d", p)
	}
}

func TestElectLeadersAnswersPerPartition(t *testing.T) {
	h := newHarness(t, testConfig(), 5)
	h.settle()
	epochs := h.cluster(2, 0)
	require.Zero(t, h.createTopic("t", 2, 2).Err)
	s := h.state("t", 0)
	other := s.Replicas[1]
	// Move partition 0's leadership away with a shutdown/restart of its leader.
	h.ask(ControlledShutdown{NodeID: s.Leader, BrokerEpoch: epochs[s.Leader]})
	h.settle()
	epochs[s.Leader] = h.register(s.Leader, 2, "")
	h.beat(s.Leader, epochs[s.Leader])
	cur := h.state("t", 0)
	require.Equal(t, other, cur.Leader)
	id := h.ask(AlterPartition{NodeID: other, BrokerEpoch: epochs[other], Topic: "t",
		LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch,
		NewISR: []int32{other, s.Leader}})
	h.settle()
	require.Zero(t, h.answer(id).ErrCode())
	id = h.ask(ElectLeaders{Partitions: []core.TopicPartition{{Topic: "t", Partition: 0},
		{Topic: "t", Partition: 1}, {Topic: "u", Partition: 0}}})
	h.settle()
	r := h.answer(id).(ElectLeadersResponse)
	require.Equal(t, []ElectResult{{TP: core.TopicPartition{Topic: "t"}},
		{TP: core.TopicPartition{Topic: "t", Partition: 1}, Err: r.Results[1].Err},
		{TP: core.TopicPartition{Topic: "u"}, Err: codeUnknownTopicPartition}}, r.Results)
	require.Equal(t, s.Leader, h.state("t", 0).Leader)
}

// TestAnUnknownOutcomeIsDecidedAgainFromTheImage: a partition change answered unknown
// is decided again at once; when both commit, the second is refused by its partition
// epoch, so the decision applies once.
func TestAnUnknownOutcomeIsDecidedAgainFromTheImage(t *testing.T) {
	h := newHarness(t, testConfig(), 6)
	h.settle()
	epochs := h.cluster(3, 0)
	require.Zero(t, h.createTopic("t", 1, 3).Err)
	lead := h.state("t", 0).Leader
	var alive []int32
	for id := int32(1); id <= 3; id++ {
		if id != lead {
			alive = append(alive, id)
		}
	}
	h.advance(2000)
	for _, id := range alive {
		h.beat(id, epochs[id])
	}
	h.advance(7000) // the leader's session ends: fence
	require.Len(t, h.env.proposals, 1)
	h.commitOne()
	require.Len(t, h.env.proposals, 1, "the repair of the partition")
	h.unknownOne(true)
	require.Len(t, h.env.proposals, 1, "decided again from the image")
	before := h.state("t", 0)
	h.settle() // the late one commits first, then the new one is refused
	after := h.state("t", 0)
	require.Equal(t, before.LeaderEpoch+1, after.LeaderEpoch)
	require.Equal(t, 1, h.refused)
	require.Empty(t, h.env.proposals, "nothing left to do")
}

func TestNotLeaderDeactivates(t *testing.T) {
	h := newHarness(t, testConfig(), 7)
	h.settle()
	epochs := h.cluster(2, 0)
	id := h.ask(AllocateProducerIDs{NodeID: 1, BrokerEpoch: epochs[1]})
	sd := h.ask(ControlledShutdown{NodeID: 2, BrokerEpoch: epochs[2]})
	h.notLeaderOne()
	require.False(t, h.c.Active())
	require.Equal(t, codeNotController, h.answer(id).ErrCode())
	require.Equal(t, codeNotController, h.answer(sd).ErrCode())
	require.Empty(t, h.env.timers)
	require.Equal(t, codeNotController, h.answer(h.ask(Heartbeat{NodeID: 1})).ErrCode())
	h.lead()
	require.True(t, h.c.Active())
	require.Zero(t, h.beat(1, epochs[1]).Err)
}

func TestProducerIDBlocksDoNotOverlap(t *testing.T) {
	h := newHarness(t, testConfig(), 8)
	h.settle()
	epochs := h.cluster(2, 0)
	a := h.ask(AllocateProducerIDs{NodeID: 1, BrokerEpoch: epochs[1]})
	b := h.ask(AllocateProducerIDs{NodeID: 2, BrokerEpoch: epochs[2]})
	h.unknownOne(false) // a's block never commits
	h.settle()
	require.Equal(t, codeRetriable, h.answer(a).ErrCode())
	rb := h.answer(b).(AllocateProducerIDsResponse)
	require.Zero(t, rb.Err)
	require.Equal(t, int64(1000), rb.Start, "beyond the block in doubt")
	require.Equal(t, int64(2000), h.image.NextProducerID())
	require.Equal(t, codeStaleBrokerEpoch,
		h.answer(h.ask(AllocateProducerIDs{NodeID: 1, BrokerEpoch: 99})).ErrCode())
}

func TestCreateTopicPlacesOnUnfencedBrokersOnly(t *testing.T) {
	h := newHarness(t, testConfig(), 9)
	h.settle()
	h.cluster(2, 0)
	h.register(3, 1, "") // fenced: never beat
	r := h.createTopic("t", 1, 3)
	require.Equal(t, codeInvalidReplication, r.Err)
	r = h.createTopic("t", 4, 2)
	require.Zero(t, r.Err)
	for _, s := range r.States {
		require.NotContains(t, s.Replicas, int32(3))
	}
	require.Equal(t, codeTopicExists, h.createTopic("t", 1, 1).Err)
}

func TestProposalsInFlightAreBounded(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlight = 4
	h := newHarness(t, cfg, 10)
	h.settle()
	epochs := h.cluster(2, 0)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		require.Zero(t, h.createTopic(n, 4, 2).Err)
	}
	h.advance(2000)
	h.beat(2, epochs[2])
	h.advance(7000)
	h.commitOne() // fence 1
	for len(h.env.proposals) > 0 {
		require.LessOrEqual(t, len(h.c.Pending()), 4)
		h.commitOne()
	}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		for p := range int32(4) {
			require.Equal(t, int32(2), h.state(n, p).Leader)
		}
	}
}

func TestPendingProposalsAreTypedRecords(t *testing.T) {
	h := newHarness(t, testConfig(), 11)
	p := h.c.Pending()
	require.Len(t, p, 1)
	require.Equal(t, OpCreateCluster, p[0].Op)
	require.Equal(t, meta.KindClusterCreated, p[0].Record.Kind)
}

// TestAFollowerTakesOverFromTheLog: a second node's controller starts from a snapshot
// of the log plus the records after it, follows the rest, and when its node becomes the
// quorum leader it has nothing to redo; brokers it does not hear from are fenced a
// session after it took over, not before.
func TestAFollowerTakesOverFromTheLog(t *testing.T) {
	h := newHarness(t, testConfig(), 12)
	h.settle()
	epochs := h.cluster(3, 0)
	require.Zero(t, h.createTopic("t", 3, 3).Err)
	half := len(h.log) / 2
	snap := meta.NewImage()
	for _, r := range h.log[:half] {
		require.NoError(t, snap.Apply(r))
	}
	cfg := testConfig()
	cfg.NodeID = 2
	env := &fakeEnv{answers: map[uint64][]Response{}, timers: map[uint64]core.Time{}}
	f := New(cfg, env, nil)
	f.Step(h.now, Start{Snapshot: snap.Snapshot(), SnapshotIndex: uint64(half),
		Records: h.log[half:]})
	require.True(t, f.Image().Equal(h.image))
	id := uint64(1)
	f.Step(h.now, Request{ID: id, Msg: Heartbeat{NodeID: 1, BrokerEpoch: epochs[1]}})
	require.Equal(t, codeNotController, env.answers[id][0].ErrCode(), "not active")
	f.Step(h.now, LeaderChanged{Leader: 2, Epoch: 2})
	require.True(t, f.Active())
	require.Empty(t, env.proposals, "the image is as it should be")
	f.Step(h.now.AddMillis(8999), TimerFired{ID: 999}) // an unknown timer: ignored
	require.Empty(t, env.proposals, "every broker has a full session from the takeover")
	var expiry uint64
	for id, at := range env.timers {
		if at == h.now.AddMillis(9000) {
			expiry = id
		}
	}
	require.NotZero(t, expiry)
	f.Step(h.now.AddMillis(9000), TimerFired{ID: expiry})
	require.Len(t, env.proposals, 3, "nobody beat: all three fenced")
}

// TestARejectedProposalBacksOff: the log refuses a fence; the controller proposes
// nothing of its own until RetryBackoffMs has passed, then fences again.
func TestARejectedProposalBacksOff(t *testing.T) {
	h := newHarness(t, testConfig(), 13)
	h.settle()
	h.cluster(1, 0)
	h.advance(9000)
	p, ok := h.take()
	require.True(t, ok)
	require.Equal(t, meta.KindBrokerChange, p.rec.Kind)
	h.c.Step(h.now, MetaAnswer{Token: p.token, Outcome: Rejected})
	require.Empty(t, h.env.proposals)
	h.advance(99)
	require.Empty(t, h.env.proposals, "within the back-off")
	h.advance(1)
	require.Len(t, h.env.proposals, 1, "proposed again")
	h.settle()
	b, _ := h.image.Broker(1)
	require.Equal(t, meta.BrokerFenced, b.State)
}

// TestAChangeForADeletedTopicDoesNotApplyToItsSuccessor: a repair decided for a topic
// that is deleted and created again (same name, new id) before the repair commits does
// not apply to the new topic; the controller decides again for the new one.
func TestAChangeForADeletedTopicDoesNotApplyToItsSuccessor(t *testing.T) {
	h := newHarness(t, testConfig(), 14)
	h.settle()
	epochs := h.cluster(2, 0)
	id := h.ask(CreateTopic{Name: "t", TopicID: [16]byte{1}, Partitions: 1,
		ReplicationFactor: 2})
	h.settle()
	created := h.answer(id).(CreateTopicResponse)
	require.Zero(t, created.Err)
	lead, other := created.States[0].Leader, created.States[0].Replicas[1]
	h.advance(2000)
	h.beat(other, epochs[other])
	h.advance(7000) // the leader's session ends
	require.True(t, h.commitOne(), "the fence")
	require.Len(t, h.env.proposals, 1, "the repair, in flight")
	h.commitRecord(meta.Record{Kind: meta.KindTopicDeleted, Topic: "t"})
	h.commitRecord(meta.Record{Kind: meta.KindTopicCreated, Topic: "t", TopicID: [16]byte{2},
		Partitions: 1, PartitionStates: created.States})
	refused := h.refused
	require.True(t, h.commitOne())
	require.Equal(t, refused+1, h.refused, "the repair named the deleted topic")
	require.Equal(t, lead, h.state("t", 0).Leader)
	h.settle()
	s := h.state("t", 0)
	require.Equal(t, other, s.Leader, "repaired again, for the new topic")
	require.Equal(t, int32(1), s.LeaderEpoch)
	require.Equal(t, [16]byte{2}, h.log[len(h.log)-1].TopicID)
}

// TestNotLeaderForAnEarlierTermKeepsTheControllerActive: the node lost and regained
// leadership without the controller hearing of another leader; a proposal of the old
// term answered not-leader does not deactivate it.
func TestNotLeaderForAnEarlierTermKeepsTheControllerActive(t *testing.T) {
	h := newHarness(t, testConfig(), 15)
	require.Len(t, h.env.proposals, 1) // ClusterCreated, proposed in epoch 1
	h.lead()                           // epoch 2, still this node
	p, _ := h.take()
	h.c.Step(h.now, MetaAnswer{Token: p.token, Outcome: NotLeader, Leader: -1})
	require.True(t, h.c.Active())
	require.Len(t, h.env.proposals, 1, "proposed again in the new term")
	h.settle()
	require.Equal(t, "c", h.image.ClusterID())
}

// Each valid heartbeat records how far its broker applied the log (DescribeQuorum's
// log end offsets); a refused one records nothing, and a new activation starts afresh.
func TestHeartbeatsRecordProgress(t *testing.T) {
	h := newHarness(t, testConfig(), 1)
	h.settle()
	epoch := h.register(1, 1, "")
	h.advance(5)
	h.beat(1, epoch)
	p, ok := h.c.Progress()[1]
	require.True(t, ok)
	require.Positive(t, p.Index)
	require.Equal(t, h.now, p.At)
	require.Equal(t, codeStaleBrokerEpoch, h.beat(1, epoch-1).Err)
	require.Len(t, h.c.Progress(), 1, "a stale heartbeat records nothing")
	require.Equal(t, p, h.c.Progress()[1])
}

// A new incarnation whose registration was proposed but did not commit (its outcome
// unknown, then lost) may register again at once: its own first attempt is no contact
// with the registered process (seed 761: counted, it refused the node's retries for a
// session, and the node gave up as if another process held its id).
func TestANewcomersLostRegistrationDoesNotMakeItsRetryADuplicate(t *testing.T) {
	h := newHarness(t, testConfig(), 1)
	h.settle()
	h.cluster(1, 0)
	h.advance(9000) // the old process is silent: fenced
	h.settle()
	id := h.ask(RegisterBroker{NodeID: 1, Incarnation: [16]byte{2}, ClusterID: "c"})
	h.unknownOne(false) // proposed, never committed
	require.NotNil(t, h.answer(id))
	b, _ := h.image.Broker(1)
	require.Equal(t, [16]byte{1}, b.Incarnation, "still the old registration")
	id = h.ask(RegisterBroker{NodeID: 1, Incarnation: [16]byte{2}, ClusterID: "c"})
	require.Nil(t, h.answer(id), "proposed again, not refused")
	h.settle()
	require.Zero(t, h.answer(id).ErrCode())
	b, _ = h.image.Broker(1)
	require.Equal(t, [16]byte{2}, b.Incarnation)
}
