package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core/meta"
)

// A leader that restarts after a power loss lost a tail its followers had fetched. Its
// replayed image still names it leader in the same epoch: as a cluster member it leads
// nothing (produces and follower fetches get NOT_LEADER_OR_FOLLOWER) until the image
// holds its new incarnation unfenced, by when the controller has moved leadership to a
// follower in a new epoch; it then follows, truncates and ends byte-identical. Leading
// at once (the bug: the simulator's finding 1) it would append other batches at the
// offsets its followers hold, in the same epoch, where their truncation cannot see it.
func TestARestartedLeaderLeadsOnlyOnceUnfenced(t *testing.T) {
	c := newTestCluster(t, 2, 1, 2, 3)
	c.handFollowers = false
	c.commit(assignedTopicRecord("r", []meta.Config{{Name: "min.insync.replicas",
		Value: "2"}}, pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)))
	n1 := c.nodes[1]
	requireCode(t, nil, producePart(t, c.do(n1, produceReq(-1, "r", 0,
		values("a", "b")))).ErrorCode)
	c.advance(time.Second)
	c.requireIdentical(1, "r", 0, 2, 3)

	// "c" reaches the followers but never node 1's disk.
	n1.holdSyncs = true
	n1.send(produceReq(-1, "r", 0, values("c")))
	c.settle()
	c.advance(time.Second)
	for _, id := range ids(2, 3) {
		require.Equal(t, int64(3), c.nodes[id].b.replicas[tp("r", 0)].EndOffset())
	}
	c.kill(1)
	n1.incarnation = &[16]byte{2}
	c.restart(1)
	n1.holdSyncs = false
	rep := n1.b.replicas[tp("r", 0)]
	require.Equal(t, int64(2), rep.EndOffset(), "the unsynced tail is gone")
	require.True(t, rep.Follower(), "registered but not unfenced: it does not lead")
	requireCode(t, kerr.NotLeaderForPartition, producePart(t, c.do(n1,
		produceReq(-1, "r", 0, values("x")))).ErrorCode)
	ff := fetchOne(t, c.do(n1, followerFetch(2, "r", 0, 3, 0, 0, 0)))
	requireCode(t, kerr.NotLeaderForPartition, ff.ErrorCode)

	// The controller registers the new incarnation fenced, moves leadership to node 2 in
	// epoch 1 without node 1 in the ISR, then unfences node 1.
	c.commit(meta.Record{Kind: meta.KindBrokerRegistered, NodeID: 1, BrokerEpoch: 200,
		Incarnation: [16]byte{2}, Host: "127.0.0.1", Port: 9091,
		BrokerState: meta.BrokerFenced})
	require.True(t, rep.Follower())
	c.commit(changeRecord("r", 0, pstate(ids(1, 2, 3), ids(2, 3), 2, 1, 1)),
		meta.Record{Kind: meta.KindBrokerChange, NodeID: 1, BrokerEpoch: 200,
			BrokerState: meta.BrokerUnfenced})
	requireCode(t, nil, producePart(t, c.do(c.nodes[2], produceReq(-1, "r", 0,
		values("d")))).ErrorCode)
	c.advance(5 * time.Second)
	c.requireIdentical(2, "r", 0, 1, 3)
	require.Equal(t, int64(4), rep.EndOffset())
}
