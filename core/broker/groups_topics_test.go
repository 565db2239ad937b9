package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *harness) commitOK(group, topic string, part int32, offset int64) {
	h.t.Helper()
	for _, c := range commitCodes(h.do(commitReq(group, -1, "", topic, part, offset))) {
		requireCode(h.t, nil, c)
	}
}

func (h *harness) deleteTopicOK(name string) {
	h.t.Helper()
	resp := h.deleteTopics(deleteReq(maxVersion(kmsg.DeleteTopics), name))
	requireCode(h.t, nil, resp.Topics[0].ErrorCode)
}

// Issue 6 item 7: deleting a topic kept its groups' committed offsets, so a topic
// created again under the name inherited offsets past its end. Kafka removes them with
// the topic; so does Sluice, durably.
func TestDeletingATopicRemovesItsCommittedOffsets(t *testing.T) {
	h := newHarness(t, groupOpts)
	h.mustCreate("t", 2)
	h.mustCreate("u", 1)
	h.commitOK("g", "t", 0, 5)
	h.commitOK("g", "t", 1, 7)
	h.commitOK("g", "u", 0, 3)
	h.commitOK("other", "t", 0, 2)

	h.deleteTopicOK("t")
	h.mustCreate("t", 2)
	h.requireOffset(-1, "g", "t", 0, "the re-created topic starts without offsets")
	h.requireOffset(-1, "g", "t", 1)
	h.requireOffset(-1, "other", "t", 0)
	h.requireOffset(3, "g", "u", 0, "other topics' offsets stay")

	h.restart()
	h.requireOffset(-1, "g", "t", 0, "the removal is durable")
	h.requireOffset(-1, "other", "t", 0)
	h.requireOffset(3, "g", "u", 0)
	require.NotContains(t, h.groupIDs(), "other", "a group left with nothing is forgotten")

	// New commits on the new topic are kept as usual.
	h.commitOK("g", "t", 0, 1)
	h.restart()
	h.requireOffset(1, "g", "t", 0)
}

// A commit still waiting for its fsync when the topic is deleted is appended before
// the tombstones: it must not outlive the topic either.
func TestDeletingATopicRemovesOffsetsBeingCommitted(t *testing.T) {
	h := newHarness(t, groupOpts)
	h.mustCreate("t", 1)
	h.commitOK("seed", "t", 0, 1) // creates the offsets topic
	h.holdSyncs = true
	commit := h.send(commitReq("g", -1, "", "t", int32(0), int64(9)))
	del := h.send(deleteReq(maxVersion(kmsg.DeleteTopics), "t"))
	h.deliverMeta()
	_, answered := h.reply(del)
	require.False(t, answered, "the deletion waits for the offsets' tombstones")
	h.holdSyncs = false
	h.settle()
	_, answered = h.reply(commit)
	require.True(t, answered)
	_, answered = h.reply(del)
	require.True(t, answered)
	h.mustCreate("t", 1)
	h.requireOffset(-1, "g", "t", 0)
	h.restart()
	h.requireOffset(-1, "g", "t", 0)
}

// A crash after the deletion committed but before its tombstones were durable leaves
// the offsets in the log; the next start removes them, ahead of any creation.
func TestOffsetsOfATopicDeletedBeforeACrashAreRemovedAtStart(t *testing.T) {
	h := newHarness(t, groupOpts)
	h.mustCreate("t", 1)
	h.commitOK("g", "t", 0, 5)
	h.holdSyncs = true
	h.send(deleteReq(maxVersion(kmsg.DeleteTopics), "t"))
	h.deliverMeta()
	require.Nil(t, h.b.image.Topic("t"), "the deletion committed")
	h.holdSyncs = false
	h.crash() // the tombstones were never synced

	// A creation sent right after the start queues behind the removal.
	id := h.send(autoCreateReq([]string{"t"}))
	h.settle()
	_, answered := h.reply(id)
	require.True(t, answered)
	h.requireOffset(-1, "g", "t", 0)
	h.restart()
	h.requireOffset(-1, "g", "t", 0)
}
