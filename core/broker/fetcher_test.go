package broker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
)

// followerSetup is a broker hosting t-0 (one partition, empty) and a simulated leader
// node 2 with the topic's replica settings.
func followerSetup(t *testing.T) (*harness, *testLeader, core.TopicPartition) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	tp := core.TopicPartition{Topic: "t", Partition: 0}
	return h, newTestLeader(t, 2, h.b.replicaConfig(h.b.image.Topic("t"))), tp
}

func backoff(h *harness) time.Duration {
	return time.Duration(h.cfg.Fetcher.BackoffMs) * time.Millisecond
}

// An empty follower fetches at once (nothing to truncate) with Kafka's follower
// settings, and copies the leader's log byte for byte; its high-water mark reaches the
// leader's once its fetch offset told the leader it holds everything.
func TestFollowerCatchesUpFromEmpty(t *testing.T) {
	h, l, tp := followerSetup(t)
	l.lead(tp, 1, nil, 1)
	l.produce(tp, values("a", "b"), values("c"), values("d", "e", "f"))
	h.b.follow(tp, 2, 1)
	require.True(t, h.b.replicas[tp].Follower())

	p, msg := h.onePeer()
	require.EqualValues(t, 2, p.Node)
	require.EqualValues(t, 30_000, p.TimeoutMs)
	f, ok := msg.(*kmsg.FetchRequest)
	require.True(t, ok, "an empty log has nothing to truncate: %T", msg)
	require.EqualValues(t, 12, f.Version)
	require.EqualValues(t, 1, f.ReplicaID)
	require.EqualValues(t, 500, f.MaxWaitMillis)
	require.EqualValues(t, 1, f.MinBytes)
	require.EqualValues(t, 10<<20, f.MaxBytes)
	require.EqualValues(t, 0, f.SessionEpoch, "a full fetch asking for a session")
	require.EqualValues(t, 0, f.SessionID)
	require.Len(t, f.Topics, 1)
	fp := f.Topics[0].Partitions[0]
	require.EqualValues(t, 1, fp.CurrentLeaderEpoch)
	require.EqualValues(t, 0, fp.FetchOffset)
	require.EqualValues(t, -1, fp.LastFetchedEpoch)
	require.EqualValues(t, 1<<20, fp.PartitionMaxBytes)

	h.catchUp(l, tp, 20)
	require.Equal(t, l.logs[tp].Batches(), h.followerBatches(tp))
	require.EqualValues(t, 6, h.b.replicas[tp].HighWatermark())
	leader, phase, ok := h.b.following(tp)
	require.True(t, ok)
	require.EqualValues(t, 2, leader)
	require.Equal(t, phaseFetching, phase)
}

// Steady tailing: new records arrive with the next fetch; with log.flush.policy=always
// the follower sends no Fetch until what it appended is fsynced (F2), and its
// high-water mark follows the leader's.
func TestFollowerTailsAndFetchesOnlyAfterItsFsync(t *testing.T) {
	h, l, tp := followerSetup(t)
	l.lead(tp, 1, nil, 1)
	l.produce(tp, values("a"))
	h.b.follow(tp, 2, 1)
	h.catchUp(l, tp, 20)
	for i := range 5 {
		l.produce(tp, values(fmt.Sprint("v", i)))
		h.holdSyncs = true
		h.serve(map[int32]*testLeader{2: l})
		require.Empty(t, h.env.peerReqs, "no fetch before the fsync of what was appended")
		require.Len(t, h.env.syncs, 1)
		require.EqualValues(t, i+2, h.b.replicas[tp].EndOffset())
		h.holdSyncs = false
		h.settle()
		_, msg := h.onePeer()
		require.EqualValues(t, i+2, msg.(*kmsg.FetchRequest).Topics[0].Partitions[0].FetchOffset)
		h.serve(map[int32]*testLeader{2: l}) // tells the leader: the hwm moves
		require.EqualValues(t, i+2, l.reps[tp].HighWatermark())
		require.EqualValues(t, i+2, h.b.replicas[tp].HighWatermark(),
			"the follower's high-water mark follows the leader's")
	}
	require.Equal(t, l.logs[tp].Batches(), h.followerBatches(tp))
}

// divergedFollower: node 2 led epoch 1 and the follower copied a, b (committed) and
// c, d (not committed); node 3 leads epoch 2 from a, b only and wrote x, yz. The
// follower is told to follow node 3.
func divergedFollower(t *testing.T) (*harness, *testLeader, *testLeader, core.TopicPartition) {
	h, l1, tp := followerSetup(t)
	l1.lead(tp, 1, nil, 1)
	l1.produce(tp, values("a"), values("b"))
	h.b.follow(tp, 2, 1)
	h.catchUp(l1, tp, 20)
	l1.produce(tp, values("c"), values("d"))
	h.serve(map[int32]*testLeader{2: l1})
	require.EqualValues(t, 4, h.b.replicas[tp].EndOffset())
	require.EqualValues(t, 2, h.b.replicas[tp].HighWatermark())

	l2 := newTestLeader(t, 3, l1.cfg)
	l2.lead(tp, 2, l1.logs[tp].Batches()[:2], 1)
	l2.produce(tp, values("x"), values("y", "z"))
	l1.reps[tp].BecomeFollower(2)
	return h, l1, l2, tp
}

// After a leader change the follower asks the new leader where its last epoch ends
// (OffsetForLeaderEpoch, ReplicaID set) before fetching, cuts the uncommitted tail the
// new leader does not have, and then copies the new leader's log.
func TestFollowerTruncatesDivergentTailBeforeFetching(t *testing.T) {
	h, l1, l2, tp := divergedFollower(t)
	h.b.follow(tp, 3, 2)
	reqs := h.takePeer()
	require.Len(t, reqs, 2, "the old link's fetch is still out; the new link asks")
	require.EqualValues(t, 2, reqs[0].Node)
	require.EqualValues(t, 3, reqs[1].Node)
	ask := reqs[1].Msg.(*kmsg.OffsetForLeaderEpochRequest)
	require.EqualValues(t, 1, ask.ReplicaID)
	ap := ask.Topics[0].Partitions[0]
	require.EqualValues(t, 1, ap.LeaderEpoch, "the follower's last epoch")
	require.EqualValues(t, 2, ap.CurrentLeaderEpoch)
	// The old leader's answer comes late: ignored (F4).
	h.step(PeerReply{Node: 2, ID: reqs[0].ID, Msg: l1.answer(reqs[0])})
	require.EqualValues(t, 4, h.b.replicas[tp].EndOffset(), "a stale answer changes nothing")
	h.env.peerReqs = append(h.env.peerReqs, reqs[1])
	h.serve(map[int32]*testLeader{3: l2})
	require.EqualValues(t, 2, h.b.replicas[tp].EndOffset(), "c, d cut")
	h.catchUp(l2, tp, 20)
	require.Equal(t, l2.logs[tp].Batches(), h.followerBatches(tp))
	require.EqualValues(t, 5, h.b.replicas[tp].HighWatermark())
	_, ok := h.b.fetcher.links[2]
	require.False(t, ok, "the old link is gone once its request came back")
}

// Fetch v12's DivergingEpoch: a leader whose OffsetForLeaderEpoch answer let the
// follower keep its tail (here: an answer from a stale view) still tells it, in the
// Fetch answer, where the logs diverge; the follower cuts there and goes on.
func TestFollowerTruncatesOnDivergingEpoch(t *testing.T) {
	h, _, l2, tp := divergedFollower(t)
	h.b.follow(tp, 3, 2)
	reqs := h.takePeer()
	require.Len(t, reqs, 2)
	ask := reqs[1]
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
	rp.LeaderEpoch, rp.EndOffset = 1, 4 // "epoch 1 ends at 4": nothing to cut
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	h.step(PeerReply{Node: 3, ID: ask.ID, Msg: resp})
	require.EqualValues(t, 4, h.b.replicas[tp].EndOffset())

	_, msg := h.onePeer()
	fp := msg.(*kmsg.FetchRequest).Topics[0].Partitions[0]
	require.EqualValues(t, 4, fp.FetchOffset)
	require.EqualValues(t, 1, fp.LastFetchedEpoch)
	h.serve(map[int32]*testLeader{3: l2})
	require.EqualValues(t, 2, h.b.replicas[tp].EndOffset(), "cut at the diverging epoch's end")
	h.catchUp(l2, tp, 20)
	require.Equal(t, l2.logs[tp].Batches(), h.followerBatches(tp))
}

// FENCED_LEADER_EPOCH and UNKNOWN_LEADER_EPOCH: the follower keeps the partition and
// asks again after replica.fetch.backoff.ms, or at once when new metadata (follow with
// another epoch) arrives.
func TestFollowerEpochFencingWaitsForMetadata(t *testing.T) {
	h, l, tp := followerSetup(t)
	l.lead(tp, 2, nil, 1)
	l.produce(tp, values("a"))
	leaders := map[int32]*testLeader{2: l}
	h.b.follow(tp, 2, 1) // stale metadata: the leader is in epoch 2
	h.serve(leaders)
	require.Empty(t, h.env.peerReqs, "fenced: backing off")
	h.advance(backoff(h) - time.Millisecond)
	require.Empty(t, h.env.peerReqs)
	h.advance(time.Millisecond)
	require.Len(t, h.env.peerReqs, 1, "asked again after the backoff")
	h.serve(leaders)
	require.Empty(t, h.env.peerReqs)

	h.b.follow(tp, 2, 3) // ahead of the leader: UNKNOWN_LEADER_EPOCH
	require.Len(t, h.env.peerReqs, 1, "new metadata: asked at once")
	_, msg := h.onePeer()
	require.EqualValues(t, 3, msg.(*kmsg.FetchRequest).Topics[0].Partitions[0].CurrentLeaderEpoch)
	h.serve(leaders)
	require.Empty(t, h.env.peerReqs)
	require.Zero(t, h.b.replicas[tp].EndOffset())

	h.b.follow(tp, 2, 2)
	h.catchUp(l, tp, 20)
	require.Equal(t, l.logs[tp].Batches(), h.followerBatches(tp))
}

// A leader change while a Fetch is in flight: the answer to the old request, even with
// records, is not applied (F4), and the old link goes away.
func TestFollowerIgnoresAnswerFromBeforeALeaderChange(t *testing.T) {
	h, l, tp := followerSetup(t)
	l.lead(tp, 1, nil, 1)
	l.produce(tp, values("a"), values("b"))
	h.b.follow(tp, 2, 1)
	old := h.takePeer()
	require.Len(t, old, 1)
	l3 := newTestLeader(t, 3, l.cfg)
	l3.lead(tp, 2, nil, 1)
	h.b.follow(tp, 3, 2)
	h.step(PeerReply{Node: 2, ID: old[0].ID, Msg: l.answer(old[0])})
	require.Zero(t, h.b.replicas[tp].EndOffset(), "records from the old leader dropped")
	require.NotContains(t, h.b.fetcher.links, int32(2))
	h.catchUp(l3, tp, 20)
	require.Empty(t, h.followerBatches(tp))
}

// A transport error (PeerReply.Err) backs the link's partitions off: 50 ms after the
// first in a row (a pooled connection to a node that restarted finds EOF once, and the
// next request dials afresh), replica.fetch.backoff.ms after each further one; an
// answer starts the count again.
func TestFollowerTransportErrorBacksOff(t *testing.T) {
	h, l, tp := followerSetup(t)
	l.lead(tp, 1, nil, 1)
	l.produce(tp, values("a"))
	h.b.follow(tp, 2, 1)
	fail := func(wait time.Duration) {
		t.Helper()
		p, _ := h.onePeer()
		h.env.peerReqs = nil
		require.Contains(t, pendingText(h, PendingFollower), "PeerReply id=")
		h.step(PeerReply{Node: 2, ID: p.ID, Err: errors.New("connection refused")})
		require.Empty(t, h.env.peerReqs)
		require.Contains(t, pendingText(h, PendingFollower),
			fmt.Sprintf("due in %dms", wait.Milliseconds()), "the backoff is visible in Pending")
		h.advance(wait - time.Millisecond)
		require.Empty(t, h.env.peerReqs, "still backing off")
		h.advance(time.Millisecond)
	}
	fail(50 * time.Millisecond)
	fail(backoff(h))
	fail(backoff(h))
	h.catchUp(l, tp, 20)
	require.Equal(t, l.logs[tp].Batches(), h.followerBatches(tp))
	l.produce(tp, values("b"))
	h.advance(time.Second)
	fail(50 * time.Millisecond) // after answers, a first failure again
}

// Records that fail their CRC are refused whole: nothing of them is stored, a line is
// logged and the partition backs off; the next good answer is taken.
func TestFollowerRefusesCorruptRecordsAndBacksOff(t *testing.T) {
	h, l, tp := followerSetup(t)
	l.lead(tp, 1, nil, 1)
	l.produce(tp, values("a"), values("b"))
	h.b.follow(tp, 2, 1)
	l.rewrite = func(resp *kmsg.FetchResponse) {
		p := &resp.Topics[0].Partitions[0]
		if len(p.RecordBatches) > 0 {
			p.RecordBatches[len(p.RecordBatches)-1] ^= 0xff
		}
	}
	h.serve(map[int32]*testLeader{2: l})
	require.EqualValues(t, 1, h.b.replicas[tp].EndOffset(), "the good first batch stays")
	require.Empty(t, h.env.peerReqs, "backing off")
	l.rewrite = func(resp *kmsg.FetchResponse) {
		resp.Topics[0].Partitions[0].RecordBatches = []byte{1, 2} // a cut header only
	}
	h.advance(backoff(h))
	h.serve(map[int32]*testLeader{2: l})
	require.EqualValues(t, 1, h.b.replicas[tp].EndOffset())
	require.Empty(t, h.env.peerReqs, "backing off, not asking again at once")
	l.rewrite = func(resp *kmsg.FetchResponse) {
		// Garbage with a plausible header length: refused by the replica, not a panic.
		resp.Topics[0].Partitions[0].RecordBatches = make([]byte, 100)
	}
	h.advance(backoff(h))
	h.serve(map[int32]*testLeader{2: l})
	require.EqualValues(t, 1, h.b.replicas[tp].EndOffset())
	l.rewrite = nil
	h.advance(backoff(h))
	h.catchUp(l, tp, 20)
	require.Equal(t, l.logs[tp].Batches(), h.followerBatches(tp))
}

// OFFSET_OUT_OF_RANGE with the follower ahead of its leader (here a leader without
// epoch checks, after an unclean election): the follower asks the leader's end
// (ListOffsets, ReplicaID set), cuts back to it and fetches from there.
func TestFollowerAheadOfLeaderEndCutsBack(t *testing.T) {
	h, l, tp := followerSetup(t)
	l.lead(tp, 1, nil, 1)
	l.produce(tp, values("a"), values("b"), values("c"))
	h.b.follow(tp, 2, 1)
	h.catchUp(l, tp, 20)
	short := newTestLeader(t, 2, l.cfg)
	short.lead(tp, 1, l.logs[tp].Batches()[:1], 1) // lost b, c (unclean election)
	short.rewrite = func(resp *kmsg.FetchResponse) {
		p := &resp.Topics[0].Partitions[0]
		if p.DivergingEpoch.Epoch >= 0 { // a leader without epoch checks
			p.ErrorCode = kerr.OffsetOutOfRange.Code
			p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = -1, -1
		}
	}
	h.serve(map[int32]*testLeader{2: short})
	_, msg := h.onePeer()
	require.IsType(t, &kmsg.ListOffsetsRequest{}, msg)
	h.serve(map[int32]*testLeader{2: short})
	require.EqualValues(t, 1, h.b.replicas[tp].EndOffset(), "cut back to the leader's end")
	h.catchUp(short, tp, 20)
	require.Equal(t, short.logs[tp].Batches(), h.followerBatches(tp))
}

// A follower whose log ends below the leader's log start (the leader deleted what it
// would fetch next) empties its log, restarts at the leader's log start (Kafka's
// truncateFullyAndStartAt) and copies the leader's log from there; after a crash it is
// still there. Without the leader's log start (an answer without it) it backs off.
func TestFollowerBehindLeaderStartResetsToIt(t *testing.T) {
	h, l, tp := followerSetup(t)
	lead := l.lead(tp, 1, nil)
	l.produce(tp, values("a"), values("b"), values("c"))
	h.b.follow(tp, 2, 1)
	h.catchUp(l, tp, 20)
	require.EqualValues(t, 3, h.b.replicas[tp].EndOffset())
	l.produce(tp, values("d"), values("e"), values("f"))
	_, code := lead.DeleteRecordsBefore(5)
	require.Zero(t, code)

	// An answer without the leader's log start: nothing to restart at; it backs off.
	l.rewrite = func(resp *kmsg.FetchResponse) {
		if p := &resp.Topics[0].Partitions[0]; p.ErrorCode != 0 {
			p.LogStartOffset = -1
		}
	}
	h.serve(map[int32]*testLeader{2: l}) // OFFSET_OUT_OF_RANGE
	_, msg := h.onePeer()
	require.IsType(t, &kmsg.ListOffsetsRequest{}, msg)
	h.serve(map[int32]*testLeader{2: l})
	require.Empty(t, h.env.peerReqs, "backing off")
	require.EqualValues(t, 3, h.b.replicas[tp].EndOffset())

	l.rewrite = nil
	h.advance(backoff(h))
	h.serve(map[int32]*testLeader{2: l}) // OFFSET_OUT_OF_RANGE, with the log start
	h.serve(map[int32]*testLeader{2: l}) // ListOffsets: reset
	rep := h.b.replicas[tp]
	require.EqualValues(t, 5, rep.StartOffset())
	require.EqualValues(t, 5, rep.EndOffset())
	h.catchUp(l, tp, 20)
	// The leader's log still holds the deleted batches below its start (one segment).
	require.Equal(t, l.logs[tp].Batches()[5:], h.followerBatches(tp))
	require.EqualValues(t, 5, h.b.replicas[tp].StartOffset())

	h.crash()
	h.b.follow(tp, 2, 2)
	rep = h.b.replicas[tp]
	require.EqualValues(t, 5, rep.StartOffset(), "the reset survives a crash")
	require.Equal(t, l.logs[tp].Batches()[5:], h.followerBatches(tp))
}

// The follower's high-water mark is the leader's: it stays put while the leader's
// waits for another ISR member, however much the follower holds, and moves when the
// leader's does.
func TestFollowerHighWatermarkFollowsTheLeaders(t *testing.T) {
	h, l, tp := followerSetup(t)
	lead := l.lead(tp, 1, nil, 1, 3) // node 3 is in the ISR and never fetches
	l.produce(tp, values("a"), values("b"))
	h.b.follow(tp, 2, 1)
	for range 4 {
		h.serve(map[int32]*testLeader{2: l})
	}
	require.EqualValues(t, 2, h.b.replicas[tp].EndOffset())
	require.Zero(t, lead.HighWatermark())
	require.Zero(t, h.b.replicas[tp].HighWatermark())
	lead.SetISR([]int32{1}) // node 3 left the ISR
	h.serve(map[int32]*testLeader{2: l})
	require.EqualValues(t, 2, h.b.replicas[tp].HighWatermark())
	// A consumer reading the follower sees the leader's committed records only.
	res := h.b.replicas[tp].Read(0, 1<<20)
	require.Zero(t, res.Err)
	require.EqualValues(t, 2, res.HighWatermark)
}

// unfollow stops the partition: the answer in flight is dropped, no more requests go
// out and the link is forgotten.
func TestUnfollowStopsFetching(t *testing.T) {
	h, l, tp := followerSetup(t)
	l.lead(tp, 1, nil, 1)
	l.produce(tp, values("a"))
	h.b.follow(tp, 2, 1)
	p, _ := h.onePeer()
	h.env.peerReqs = nil
	h.b.unfollow(tp)
	h.step(PeerReply{Node: 2, ID: p.ID, Msg: l.answer(p)})
	h.advance(10 * backoff(h))
	require.Empty(t, h.env.peerReqs)
	require.Zero(t, h.b.replicas[tp].EndOffset())
	require.Empty(t, h.b.fetcher.links)
	_, _, ok := h.b.following(tp)
	require.False(t, ok)
	h.step(PeerReply{Node: 2, ID: p.ID, Err: errors.New("late duplicate")}) // no waiter
}

// Many partitions on one leader go in one Fetch: one request in flight per leader
// node, capped in all by replica.fetch.response.max.bytes.
func TestFollowerFetchesAllPartitionsOfALeaderInOneRequest(t *testing.T) {
	const n = 10_000
	h := newHarness(t)
	h.mustCreate("big", n)
	for p := range int32(n) {
		h.b.follow(core.TopicPartition{Topic: "big", Partition: p}, 2, 1)
	}
	first, _ := h.onePeer()
	h.env.peerReqs = nil
	h.step(PeerReply{Node: 2, ID: first.ID, Msg: kmsg.NewPtrFetchResponse()})
	_, msg := h.onePeer()
	f := msg.(*kmsg.FetchRequest)
	require.Len(t, f.Topics, 1)
	require.Len(t, f.Topics[0].Partitions, n)
	require.EqualValues(t, 10<<20, f.MaxBytes)
	for i, p := range f.Topics[0].Partitions {
		require.EqualValues(t, i, p.Partition, "in partition order")
	}
}

// A partition followed before its log opened starts once it has.
func TestFollowBeforeTheLogOpens(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.OpenLogsPerStep = 1 })
	h.holdTimers = true
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = maxVersion(kmsg.CreateTopics), 5000
	req.Topics = append(req.Topics, ctTopic("t", 3, -1))
	h.send(req)
	h.settle()
	tp := core.TopicPartition{Topic: "t", Partition: 2}
	require.Nil(t, h.b.replicas[tp], "still queued")
	h.b.follow(tp, 2, 1)
	require.Empty(t, h.env.peerReqs)
	h.holdTimers = false
	h.settle()
	require.True(t, h.b.replicas[tp].Follower())
	require.Len(t, h.env.peerReqs, 1)
}

// pendingText is the broker's pending work of one kind, one line each.
func pendingText(h *harness, kind PendingKind) string {
	var out string
	for _, p := range h.b.Pending() {
		if p.Kind == kind {
			out += p.String() + "\n"
		}
	}
	return out
}

// A leader that becomes a follower answers what waited for its high-water mark
// NOT_LEADER_OR_FOLLOWER: the tail it waited on is cut when the new leader lacks it,
// and the new leader's high-water mark must not acknowledge it.
func TestFollowAnswersProducesWaitingAsLeader(t *testing.T) {
	h, l, tp := followerSetup(t)
	h.holdSyncs = true
	id := h.send(produceReq(-1, "t", 0, values("mine")))
	h.settle()
	_, answered := h.reply(id)
	require.False(t, answered, "acks=all waits for the fsync")
	l.lead(tp, 1, nil, 1)
	l.produce(tp, values("theirs"))
	h.b.follow(tp, 2, 1)
	resp, ok := h.reply(id)
	require.True(t, ok)
	require.Equal(t, kerr.NotLeaderForPartition.Code, producePart(t, resp).ErrorCode)
	require.Empty(t, h.env.peerReqs, "no truncation while the old sync is in flight (F3)")
	h.holdSyncs = false
	h.settle()
	h.catchUp(l, tp, 20)
	require.Equal(t, l.logs[tp].Batches(), h.followerBatches(tp))
}

// The leader's log start (retention, DeleteRecords) moves the follower's, as far as the
// follower's high-water mark.
func TestFollowerMovesItsLogStartWithTheLeaders(t *testing.T) {
	h, l, tp := followerSetup(t)
	lead := l.lead(tp, 1, nil, 1)
	l.produce(tp, values("a"), values("b"), values("c"))
	h.b.follow(tp, 2, 1)
	h.catchUp(l, tp, 20)
	_, code := lead.DeleteRecordsBefore(2)
	require.Zero(t, code)
	require.Zero(t, h.b.replicas[tp].StartOffset())
	l.produce(tp, values("d"))
	h.serve(map[int32]*testLeader{2: l})
	require.EqualValues(t, 2, h.b.replicas[tp].StartOffset())
	h.catchUp(l, tp, 20)
}

// follow with no leader (-1) or with this node as leader stops following.
func TestFollowWithNoOtherLeaderStops(t *testing.T) {
	h, _, tp := followerSetup(t)
	h.b.follow(tp, 2, 1)
	require.Len(t, h.takePeer(), 1)
	h.b.follow(tp, -1, 2)
	_, _, ok := h.b.following(tp)
	require.False(t, ok)
	h.b.follow(tp, h.cfg.NodeID, 2)
	_, _, ok = h.b.following(tp)
	require.False(t, ok)
	require.Empty(t, h.env.peerReqs)
}

// A follower that applied a leader change before its new leader did (the controller's
// node applies first) is answered UNKNOWN_LEADER_EPOCH; no new metadata will come to it,
// so it asks again within unknownEpochRetryMs, not replica.fetch.backoff.ms: after a
// failover the new leader's acks=all writes wait for this follower.
func TestFollowerAheadOfItsLeaderAsksAgainSoon(t *testing.T) {
	h, l, tp := followerSetup(t)
	l.lead(tp, 2, nil, 1)
	leaders := map[int32]*testLeader{2: l}
	h.b.follow(tp, 2, 3)
	h.serve(leaders)
	require.Empty(t, h.env.peerReqs, "UNKNOWN_LEADER_EPOCH: backing off")
	retry := unknownEpochRetryMs * time.Millisecond
	require.Less(t, retry, backoff(h))
	h.advance(retry - time.Millisecond)
	require.Empty(t, h.env.peerReqs)
	h.advance(time.Millisecond)
	require.Len(t, h.env.peerReqs, 1, "asked again long before replica.fetch.backoff.ms")
	l.lead(tp, 3, nil, 1) // the leader applied the change
	l.produce(tp, values("a"))
	h.catchUp(l, tp, 20)
	require.Equal(t, l.logs[tp].Batches(), h.followerBatches(tp))
}

// A follower that applied a new partition before its leader did is answered
// UNKNOWN_TOPIC_OR_PARTITION; it asks again within unknownEpochRetryMs, not
// replica.fetch.backoff.ms, for unknownTopicQuickRetries answers in a row, then backs
// off fully. Waiting out the backoff held the first second of every acks=all produce
// to a new topic.
func TestFollowerOfAPartitionItsLeaderLacksAsksAgainSoon(t *testing.T) {
	h, l, tp := followerSetup(t)
	leaders := map[int32]*testLeader{2: l}
	h.b.follow(tp, 2, 0)
	retry := unknownEpochRetryMs * time.Millisecond
	require.Less(t, retry, backoff(h))
	for i := 1; i <= unknownTopicQuickRetries; i++ {
		h.serve(leaders)
		require.Empty(t, h.env.peerReqs, "UNKNOWN_TOPIC_OR_PARTITION: backing off")
		h.advance(retry - time.Millisecond)
		require.Empty(t, h.env.peerReqs)
		h.advance(time.Millisecond)
		require.Len(t, h.env.peerReqs, 1, "answer %d: asked again soon", i)
	}
	h.serve(leaders)
	h.advance(backoff(h) - time.Millisecond)
	require.Empty(t, h.env.peerReqs, "after the quick retries, the full backoff")
	h.advance(time.Millisecond)
	require.Len(t, h.env.peerReqs, 1)

	l.lead(tp, 0, nil, 1) // the leader took the partition up
	l.produce(tp, values("a"))
	h.catchUp(l, tp, 20)
	require.Equal(t, l.logs[tp].Batches(), h.followerBatches(tp))
}

// A follower whose log diverges from its new leader's below its own log start (its old
// leader's DeleteRecords or retention moved the start past the new leader's end of the
// shared epoch) holds nothing the new leader has: it empties its log and restarts at
// the divergence point, as Kafka's truncateFullyAndStartAt, and copies the new leader's
// log from there. Clamping the cut at its own log start left it the old epoch, and the
// leader answered every fetch with the same divergence (sim finding 6, seeds 153 170
// 254 with three nodes). When the new leader's log starts past the divergence point
// the follower then restarts at the leader's start.
func TestFollowerDivergingBelowItsLogStartRestartsAtTheDivergence(t *testing.T) {
	for _, leaderStart := range []int64{0, 3} {
		t.Run(fmt.Sprint("leader start ", leaderStart), func(t *testing.T) {
			h, l1, tp := followerSetup(t)
			lead := l1.lead(tp, 1, nil, 1)
			l1.produce(tp, values("a"), values("b"), values("c"), values("d"), values("e"))
			h.b.follow(tp, 2, 1)
			h.catchUp(l1, tp, 20)
			_, code := lead.DeleteRecordsBefore(4)
			require.Zero(t, code)
			h.serve(map[int32]*testLeader{2: l1})
			rep := h.b.replicas[tp]
			require.EqualValues(t, 4, rep.StartOffset())

			// Node 3 leads epoch 2 from a, b only (c, d, e were lost with it).
			l2 := newTestLeader(t, 3, l1.cfg)
			lead2 := l2.lead(tp, 2, l1.logs[tp].Batches()[:2])
			l2.produce(tp, values("x"), values("y", "z"), values("w"))
			if leaderStart > 0 {
				_, code := lead2.DeleteRecordsBefore(leaderStart)
				require.Zero(t, code)
			}
			l1.reps[tp].BecomeFollower(2)
			h.b.follow(tp, 3, 2)
			leaders := map[int32]*testLeader{2: l1, 3: l2}
			h.catchUpWith(leaders, l2, tp, 20)
			rep = h.b.replicas[tp]
			require.EqualValues(t, max(2, leaderStart), rep.StartOffset())
			var want [][]byte
			for _, b := range l2.logs[tp].Batches() {
				if hd, err := batch.ParseHeader(b); err == nil && hd.BaseOffset >= rep.StartOffset() {
					want = append(want, b)
				}
			}
			require.Equal(t, want, h.followerBatches(tp))
			_, phase, ok := h.b.following(tp)
			require.True(t, ok)
			require.Equal(t, phaseFetching, phase)
		})
	}
}
