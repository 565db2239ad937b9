package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/controller"
)

// answerAlter decides an AlterPartition the way the controller does, commits its
// record (if any) to h and answers it.
func answerAlter(t *testing.T, h *harness, p PeerRequest) {
	t.Helper()
	req := p.Msg.(*kmsg.AlterPartitionRequest)
	rp := req.Topics[0].Partitions[0]
	m := controller.AlterPartition{NodeID: req.BrokerID, BrokerEpoch: req.BrokerEpoch,
		Topic: req.Topics[0].Topic, Partition: rp.Partition, LeaderEpoch: rp.LeaderEpoch,
		PartitionEpoch: rp.PartitionEpoch, NewISR: rp.NewISR}
	rec, change, code, _ := controller.DecideAlterPartition(h.b.image, m, controller.Eligible(h.b.image))
	if change {
		h.commitMeta(rec)
	}
	s, _, _ := h.b.image.Partition(m.Topic, m.Partition)
	h.step(PeerReply{Node: p.Node, ID: p.ID, Msg: alterResponse(m.Topic, m.Partition, code, s)})
	h.settle()
}

// An ISR member that stops fetching is dropped after replica.lag.time.max.ms: the
// leader asks the controller, keeps the old ISR for the high-water mark until the
// change commits, then acknowledges with the smaller ISR.
func TestLaggingFollowerIsDroppedFromTheISR(t *testing.T) {
	h := leaderHarness(t, ids(1, 2, 3), "2")
	require.Empty(t, h.takePeer())
	for range 4 { // node 2 keeps fetching; node 3 never does
		h.advance(11 * time.Second)
		_ = h.do(followerFetch(2, "r", 0, 0, -1, 2, 0))
	}
	require.Empty(t, h.takePeer(), "not behind for replica.lag.time.max.ms yet")
	id := h.send(produceReq(-1, "r", 0, values("a")))
	h.settle()
	_ = h.do(followerFetch(2, "r", 0, 1, 2, 2, 0))
	h.advance(2 * time.Second)
	sent := h.takePeer()
	require.Len(t, sent, 1, "the leader asks to drop node 3")
	require.Equal(t, int32(1), sent[0].Node, "to the metadata quorum's leader")
	topic, p := alterRequest(t, sent[0])
	require.Equal(t, "r", topic)
	require.Equal(t, ids(1, 2), p.NewISR)
	require.Equal(t, int32(2), p.LeaderEpoch)
	require.Equal(t, int32(0), p.PartitionEpoch)
	_, answered := h.reply(id)
	require.False(t, answered, "the shrink counts only once committed")
	require.Contains(t, pendingKinds(h), PendingISRChange)

	answerAlter(t, h, sent[0])
	s, _, _ := h.b.image.Partition("r", 0)
	require.Equal(t, ids(1, 2), s.ISR)
	resp, answered := h.reply(id)
	require.True(t, answered, "the committed ISR holds the batch")
	requireCode(t, nil, producePart(t, resp).ErrorCode)
	require.NotContains(t, pendingKinds(h), PendingISRChange)
	_ = h.do(followerFetch(2, "r", 0, 1, 2, 2, 0))
	h.advance(20 * time.Second)
	require.Empty(t, h.takePeer(), "the remaining ISR is caught up")
}

// A follower outside the ISR that catches up is added: while the change is pending the
// high-water mark already waits for it (the maximal ISR).
func TestCaughtUpFollowerJoinsTheISR(t *testing.T) {
	h := leaderHarness(t, ids(1), "1")
	requireCode(t, nil, producePart(t, h.do(produceReq(-1, "r", 0, values("a")))).ErrorCode)
	_ = h.do(followerFetch(2, "r", 0, 0, -1, 2, 0))
	require.Empty(t, h.takePeer(), "behind the high-water mark: not yet")
	_ = h.do(followerFetch(2, "r", 0, 1, 2, 2, 0))
	sent := h.takePeer()
	require.Len(t, sent, 1)
	_, p := alterRequest(t, sent[0])
	require.Equal(t, ids(1, 2), p.NewISR)

	// Pending: a new batch waits for node 2 too.
	id := h.send(produceReq(-1, "r", 0, values("b")))
	h.settle()
	_, answered := h.reply(id)
	require.False(t, answered, "the maximal ISR includes the follower being added")
	_ = h.do(followerFetch(2, "r", 0, 1, 2, 2, 0))
	require.Empty(t, h.takePeer(), "one change in flight per partition")

	answerAlter(t, h, sent[0])
	s, _, _ := h.b.image.Partition("r", 0)
	require.Equal(t, ids(1, 2), s.ISR)
	_, answered = h.reply(id)
	require.False(t, answered)
	_ = h.do(followerFetch(2, "r", 0, 2, 2, 2, 0))
	_, answered = h.reply(id)
	require.True(t, answered)
}

// NOT_CONTROLLER and lost requests are retried with a backoff; a refusal drops the
// change, and the next fetch asks again.
func TestISRChangeRetriesAndRefusals(t *testing.T) {
	h := leaderHarness(t, ids(1), "1")
	requireCode(t, nil, producePart(t, h.do(produceReq(-1, "r", 0, values("a")))).ErrorCode)
	_ = h.do(followerFetch(2, "r", 0, 1, 2, 2, 0))
	sent := h.takePeer()
	require.Len(t, sent, 1)
	s, _, _ := h.b.image.Partition("r", 0)
	h.step(PeerReply{Node: 1, ID: sent[0].ID,
		Msg: alterResponse("r", 0, kerr.NotController.Code, s)})
	require.Empty(t, h.takePeer(), "backs off first")
	h.advance(150 * time.Millisecond)
	sent = h.takePeer()
	require.Len(t, sent, 1, "retried")
	h.step(PeerReply{Node: 1, ID: sent[0].ID, Err: errTestPeer})
	h.advance(250 * time.Millisecond)
	sent = h.takePeer()
	require.Len(t, sent, 1, "retried after a lost request")

	h.step(PeerReply{Node: 1, ID: sent[0].ID,
		Msg: alterResponse("r", 0, kerr.IneligibleReplica.Code, s)})
	_ = h.do(followerFetch(2, "r", 0, 1, 2, 2, 0))
	require.Empty(t, h.takePeer(), "refused: not asked again during the backoff")
	h.advance(time.Second)
	_ = h.do(followerFetch(2, "r", 0, 1, 2, 2, 0))
	sent = h.takePeer()
	require.Len(t, sent, 1, "asked again after the backoff")
	answerAlter(t, h, sent[0])
	s, _, _ = h.b.image.Partition("r", 0)
	require.Equal(t, ids(1, 2), s.ISR)
}

var errTestPeer = errTestPeerT("peer timed out")

type errTestPeerT string

func (e errTestPeerT) Error() string { return string(e) }

// An expansion whose first AlterPartition was committed but whose answer was lost is
// answered INVALID_UPDATE_VERSION at its retry, before this node applied the record.
// The leader keeps the maximal ISR until the record comes, as Kafka does: dropping the
// follower would let the high-water mark pass what the committed ISR holds (seed 853
// of the ACL world, read-uncommitted).
func TestAStaleAnswerKeepsTheExpansionUntilItsRecord(t *testing.T) {
	h := leaderHarness(t, ids(1), "1")
	requireCode(t, nil, producePart(t, h.do(produceReq(-1, "r", 0, values("a")))).ErrorCode)
	_ = h.do(followerFetch(2, "r", 0, 1, 2, 2, 0))
	sent := h.takePeer()
	require.Len(t, sent, 1)
	req := sent[0].Msg.(*kmsg.AlterPartitionRequest)
	rp := req.Topics[0].Partitions[0]
	rec, change, code, _ := controller.DecideAlterPartition(h.b.image, controller.AlterPartition{
		NodeID: req.BrokerID, BrokerEpoch: req.BrokerEpoch, Topic: "r", Partition: 0,
		LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, NewISR: rp.NewISR},
		controller.Eligible(h.b.image))
	require.True(t, change)
	require.Zero(t, code)
	h.step(PeerReply{Node: 1, ID: sent[0].ID, Err: errTestPeer}) // committed; answer lost
	h.advance(150 * time.Millisecond)
	sent = h.takePeer()
	require.Len(t, sent, 1, "retried")
	s, _, _ := h.b.image.Partition("r", 0)
	h.step(PeerReply{Node: 1, ID: sent[0].ID,
		Msg: alterResponse("r", 0, kerr.InvalidUpdateVersion.Code, s)})
	h.settle()

	id := h.send(produceReq(-1, "r", 0, values("b")))
	h.settle()
	h.advance(time.Second)
	_, answered := h.reply(id)
	require.False(t, answered, "node 2, in the committed ISR, does not hold b yet")
	require.Contains(t, pendingKinds(h), PendingISRChange)

	h.commitMeta(rec)
	s, _, _ = h.b.image.Partition("r", 0)
	require.Equal(t, ids(1, 2), s.ISR)
	require.NotContains(t, pendingKinds(h), PendingISRChange, "the record ends the change")
	_, answered = h.reply(id)
	require.False(t, answered)
	_ = h.do(followerFetch(2, "r", 0, 2, 2, 2, 0))
	_, answered = h.reply(id)
	require.True(t, answered, "answered once node 2 holds it")
}
