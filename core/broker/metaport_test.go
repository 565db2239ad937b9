package broker

import (
	"errors"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// takeProposal returns the one proposal the broker made and clears the queue.
func (h *harness) takeProposal() proposal {
	h.t.Helper()
	require.Len(h.t, h.env.proposals, 1)
	p := h.env.proposals[0]
	h.env.proposals = nil
	return p
}

func (h *harness) sendCreate(name string, partitions int32) uint64 {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = []kmsg.CreateTopicsRequestTopic{ctTopic(name, partitions, -1)}
	req.TimeoutMillis = 5000
	req.Version = maxVersion(kmsg.CreateTopics)
	return h.send(req)
}

// An unknown outcome answers the client retriably, like a failure, and leaves the image
// alone; when the record commits after all it is applied like any other (M3).
func TestMetaUnknownAnswersRetriablyThenAppliesIfItCommits(t *testing.T) {
	h := newHarness(t)
	id := h.sendCreate("t", 2)
	p := h.takeProposal()
	h.step(MetaAnswer{Token: p.token, Outcome: MetaUnknown, Err: errors.New("leader lost")})
	resp, ok := h.reply(id)
	require.True(t, ok, "answered at once")
	rt := resp.(*kmsg.CreateTopicsResponse).Topics[0]
	requireCode(t, kerr.RequestTimedOut, rt.ErrorCode)
	require.Contains(t, deref(rt.ErrorMessage), "outcome is unknown")
	require.Nil(t, h.b.image.Topic("t"))

	h.commitMeta(p.rec) // it committed after all
	h.settle()
	require.NotNil(t, h.b.image.Topic("t"))
	require.True(t, h.hosted("t", 1))
	again := h.createTopics(ctTopic("t", 2, -1)).Topics[0]
	requireCode(t, kerr.TopicAlreadyExists, again.ErrorCode)
	require.Equal(t, uint64(1), h.b.MetaIndex(), "the retry proposed nothing")
}

// Every node applies every committed record, whoever proposed it (M2).
func TestMetaAppliedWithoutAProposalIsApplied(t *testing.T) {
	h := newHarness(t)
	h.commitMeta(meta.Record{Kind: meta.KindTopicCreated, Topic: "x", TopicID: [16]byte{9},
		Partitions: 3, ReplicationFactor: 1})
	h.settle()
	require.True(t, h.hosted("x", 2))
	require.Equal(t, int32(3), h.topicMeta("x").Partitions[2].Partition+1)
}

// NotLeader and Rejected never commit: the client hears a retriable error, and the
// broker proposes again when asked again.
func TestMetaNotLeaderAndRejectedAnswerRetriably(t *testing.T) {
	h := newHarness(t)
	for _, out := range []MetaOutcome{MetaNotLeader, MetaRejected} {
		id := h.sendCreate("t", 1)
		p := h.takeProposal()
		h.step(MetaAnswer{Token: p.token, Outcome: out, Leader: 7})
		resp, ok := h.reply(id)
		require.True(t, ok, "%v answered at once", out)
		requireCode(t, kerr.RequestTimedOut, resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
		require.Nil(t, h.b.image.Topic("t"))
	}
	h.mustCreate("t", 1)
}

// A restart from a snapshot plus the records after it reaches the image (and hosts the
// partitions) a full replay reaches (M1).
func TestStartFromSnapshotEqualsFullReplay(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("a", 2)
	h.mustCreate("b", 1, "retention.ms=100")
	h.mustCreate("gone", 1)
	del := h.deleteTopics(deleteReq(maxVersion(kmsg.DeleteTopics), "gone"))
	require.Zero(t, del.Topics[0].ErrorCode)
	cut := uint64(len(h.env.committed))
	snap := h.b.image.Snapshot()
	h.mustCreate("c", 1)
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Topics, cp.TimeoutMillis = []kmsg.CreatePartitionsRequestTopic{cpTopic("a", 3)}, 5000
	rt := h.createPartitions(cp).Topics[0]
	require.Zero(t, rt.ErrorCode)
	h.settle()

	b := New(h.cfg, h.env, rand.New(rand.NewSource(9)))
	b.Step(h.now, Start{Snapshot: snap, SnapshotIndex: cut, Records: h.env.committed[cut:]})
	require.True(t, h.b.image.Equal(b.image), "snapshot+replay differs from the live image")
	require.Equal(t, h.b.MetaIndex(), b.MetaIndex())
	require.ElementsMatch(t, h.b.sortedPartitions(), b.sortedPartitions())
}

// The broker refuses a gap in the applied indexes (B8) and a committed answer for an
// index it has not applied (B9).
func TestMetaPortOrderingInvariants(t *testing.T) {
	h := newHarness(t)
	rec := meta.Record{Kind: meta.KindProducerIDBlock, NextProducerID: 10}
	require.PanicsWithValue(t, "invariant B8 violated: MetaApplied index 2 after 0: the "+
		"metadata log must be gapless", func() { h.step(MetaApplied{Index: 2, Record: rec}) })
	require.Panics(t, func() { h.step(MetaAnswer{Token: 1, Outcome: MetaCommitted, Index: 1}) })
}

// The offsets topic's creation answered Unknown commits after all, its logs opening a
// chunk per step: the next commit must wait for them all before loading the groups,
// not find most offsets partitions unhosted.
func TestOffsetsTopicCommittedAfterUnknownOutcomeLoadsOnceOpen(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		require.NoError(t, c.Set("sluice.open.logs.per.step", "1"))
	})
	h.mustCreate("t", 1)
	id := h.send(commitReq("g", -1, "", "t", int32(0), int64(1)))
	p := h.takeProposal()
	h.step(MetaAnswer{Token: p.token, Outcome: MetaUnknown})
	resp, ok := h.reply(id)
	require.True(t, ok)
	requireCode(t, kerr.CoordinatorNotAvailable, commitCodes(resp)[0])
	h.commitMeta(p.rec) // committed after all: one log opens now, the rest later
	requireCode(t, nil, commitCodes(h.do(commitReq("g", -1, "", "t", int32(0), int64(2))))[0])
	off, code := h.fetchOffset(8, "g", "t", 0)
	requireCode(t, nil, code)
	require.Equal(t, int64(2), off)
}

// A retry checked against an image without the unknown-outcome record, which then
// commits before the retry's: the retry's record commits but does not apply, and its
// client hears a retriable error, not a success with a topic id nobody holds.
func TestCommittedRecordThatDoesNotApplyAnswersAnError(t *testing.T) {
	h := newHarness(t)
	first := h.sendCreate("t", 1)
	x := h.takeProposal()
	h.step(MetaAnswer{Token: x.token, Outcome: MetaUnknown})
	_, ok := h.reply(first)
	require.True(t, ok)
	retry := h.sendCreate("t", 1)
	y := h.takeProposal()
	require.NotEqual(t, x.rec.TopicID, y.rec.TopicID)
	h.commitMeta(x.rec) // the unknown one commits first, as raft would order them
	idx := h.commitMeta(y.rec)
	h.step(MetaAnswer{Token: y.token, Outcome: MetaCommitted, Index: idx})
	resp, ok := h.reply(retry)
	require.True(t, ok)
	rt := resp.(*kmsg.CreateTopicsResponse).Topics[0]
	requireCode(t, kerr.RequestTimedOut, rt.ErrorCode)
	require.Contains(t, deref(rt.ErrorMessage), "conflicted")
	require.Equal(t, x.rec.TopicID, h.b.image.Topic("t").ID)
	requireCode(t, kerr.TopicAlreadyExists, h.createTopics(ctTopic("t", 1, -1)).Topics[0].ErrorCode)
}

// Two proposals of the same producer-id block (the first answered Unknown, the retry
// checked against the image without it) both commit: the second overlaps the first and
// must not be handed out.
func TestOverlappingProducerIDBlockIsNotHandedOut(t *testing.T) {
	h := newHarness(t)
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = maxVersion(kmsg.InitProducerID)
	first := h.send(req)
	x := h.takeProposal()
	h.step(MetaAnswer{Token: x.token, Outcome: MetaUnknown})
	resp, _ := h.reply(first)
	requireCode(t, kerr.CoordinatorNotAvailable, resp.(*kmsg.InitProducerIDResponse).ErrorCode)
	retry := h.send(req)
	y := h.takeProposal()
	require.Equal(t, x.rec.NextProducerID, y.rec.NextProducerID)
	h.commitMeta(x.rec)
	idx := h.commitMeta(y.rec)
	h.step(MetaAnswer{Token: y.token, Outcome: MetaCommitted, Index: idx})
	resp, _ = h.reply(retry)
	requireCode(t, kerr.CoordinatorNotAvailable, resp.(*kmsg.InitProducerIDResponse).ErrorCode)
	ok := h.do(req).(*kmsg.InitProducerIDResponse) // a fresh block beyond both
	requireCode(t, nil, ok.ErrorCode)
	require.GreaterOrEqual(t, ok.ProducerID, x.rec.NextProducerID)
}

// Each quorum leader the broker hears of is counted once (the series
// sluice_quorum_leader_changes_total); an unknown leader is not an election.
func TestQuorumLeaderChangesAreCounted(t *testing.T) {
	h := newHarness(t)
	base := h.b.ReplicationStats().QuorumLeaderChanges
	h.step(MetaLeaderChanged{Leader: -1, Epoch: h.b.metaPort.epoch + 1})
	require.Equal(t, base, h.b.ReplicationStats().QuorumLeaderChanges)
	h.step(MetaLeaderChanged{Leader: 2, Epoch: h.b.metaPort.epoch + 1})
	h.step(MetaLeaderChanged{Leader: 1, Epoch: h.b.metaPort.epoch + 1})
	require.Equal(t, base+2, h.b.ReplicationStats().QuorumLeaderChanges)
}
