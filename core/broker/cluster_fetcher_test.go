package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// Three brokers with their real follower fetchers (the leader's and the follower's
// sides together, no hand-driven fetches): acks=all is answered once the fetchers
// replicated and confirmed; a follower cut off leaves the ISR after
// replica.lag.time.max.ms and the waiting produce is answered; healed, it catches up and
// joins again; a leader change makes the others follow the new leader, which takes
// produces; every follower ends byte-identical to the leader below the high-water mark.
func TestThreeBrokersReplicateWithTheirFetchers(t *testing.T) {
	c := newTestCluster(t, 2, 1, 2, 3)
	c.handFollowers = false
	c.commit(assignedTopicRecord("r", []meta.Config{{Name: "min.insync.replicas",
		Value: "2"}}, pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)))
	leader := c.nodes[1]

	id := leader.send(produceReq(-1, "r", 0, values("a", "b")))
	c.settle()
	resp, answered := leader.reply(id)
	require.True(t, answered, "the fetchers replicated and confirmed")
	requireCode(t, nil, producePart(t, resp).ErrorCode)
	c.advance(time.Second) // the followers learn the high-water mark at their next fetch
	c.requireIdentical(1, "r", 0, 2, 3)

	// Node 3 is cut off: the ISR shrinks to {1, 2} after replica.lag.time.max.ms and the
	// produce that waited for node 3 is answered.
	c.cutOff(3)
	slow := produceReq(-1, "r", 0, values("c"))
	slow.TimeoutMillis = 120_000
	id = leader.send(slow)
	c.settle()
	_, answered = leader.reply(id)
	require.False(t, answered, "node 3 is still in the ISR")
	// The check runs every replica.lag.time.max.ms / 2: a member is dropped 30 to 45 s
	// after it was last caught up.
	c.advance(46 * time.Second)
	require.Equal(t, ids(1, 2), c.isr("r", 0), "node 3 dropped")
	resp, answered = leader.reply(id)
	require.True(t, answered)
	requireCode(t, nil, producePart(t, resp).ErrorCode)

	// Healed, node 3 catches up (its fetcher backs off after the failed request, then
	// fetches) and joins the ISR again.
	c.heal(3)
	c.advance(5 * time.Second)
	require.Equal(t, ids(1, 2, 3), c.isr("r", 0), "node 3 back in the ISR")
	c.requireIdentical(1, "r", 0, 2, 3)

	// Leadership moves to node 2: nodes 1 and 3 follow it and get what it takes.
	c.commit(changeRecord("r", 0, pstate(ids(1, 2, 3), ids(1, 2, 3), 2, 1, 3)))
	requireCode(t, kerr.NotLeaderForPartition,
		producePart(t, leader.do(produceReq(1, "r", 0, values("d")))).ErrorCode)
	id = c.nodes[2].send(produceReq(-1, "r", 0, values("d")))
	c.settle()
	c.advance(2 * time.Second)
	resp, answered = c.nodes[2].reply(id)
	require.True(t, answered)
	pr := producePart(t, resp)
	requireCode(t, nil, pr.ErrorCode)
	require.Equal(t, int64(3), pr.BaseOffset)
	c.requireIdentical(2, "r", 0, 1, 3)
	require.Equal(t, int64(4), c.nodes[2].b.replicas[tp("r", 0)].HighWatermark())

	// The counters behind sluice_isr_shrinks_total and the leadership metrics (the
	// quorum's leader changes are the harness's; metaport_test.go checks them).
	stats := func(n *harness) ReplicationStats {
		s := n.b.ReplicationStats()
		s.QuorumLeaderChanges = 0
		return s
	}
	require.Equal(t, ReplicationStats{ISRShrinks: 1, ISRExpands: 1, LeadershipsLost: 1},
		stats(leader))
	require.Equal(t, ReplicationStats{LeadershipsGained: 1}, stats(c.nodes[2]))
	require.Equal(t, ReplicationStats{}, stats(c.nodes[3]))
}

// requireIdentical checks that each follower holds the leader's bytes up to the
// leader's high-water mark, and has its high-water mark.
func (c *testCluster) requireIdentical(leader int32, topic string, p int32, followers ...int32) {
	c.t.Helper()
	lr := c.nodes[leader].b.replicas[tp(topic, p)]
	hwm := lr.HighWatermark()
	want := lr.ReadForFollower(0, 1<<20).Records
	for _, n := range followers {
		fr := c.nodes[n].b.replicas[tp(topic, p)]
		require.True(c.t, fr.Follower(), "node %d follows", n)
		require.Equal(c.t, hwm, fr.HighWatermark(), "node %d's high-water mark", n)
		require.Equal(c.t, lr.EndOffset(), fr.EndOffset(), "node %d's log end", n)
		require.Equal(c.t, want, fr.ReadForFollower(0, 1<<20).Records, "node %d", n)
	}
}

// cutOff isolates node n: requests to and from it, and answers to it, wait.
func (c *testCluster) cutOff(n int32) {
	if c.cut == nil {
		c.cut = map[int32]bool{}
	}
	c.cut[n] = true
}

// heal reconnects node n: what waited fails with a transport error, as the driver's
// timeout would have failed it (E7), and delivery resumes.
func (c *testCluster) heal(n int32) {
	delete(c.cut, n)
	kept := c.cutHeld[:0]
	for _, call := range c.cutHeld {
		if c.cut[call.from] || c.cut[call.p.Node] {
			kept = append(kept, call)
			continue
		}
		c.nodes[call.from].step(PeerReply{Node: call.p.Node, ID: call.p.ID,
			Err: errors.New("test: partitioned")})
	}
	c.cutHeld = kept
	c.settle()
}

// A follower cut off while its leader's log start moves past its log end (DeleteRecords
// here; retention alike) gets OFFSET_OUT_OF_RANGE when it comes back: it empties its
// log, restarts at the leader's log start, catches up and joins the ISR again, holding
// the leader's bytes from that start.
func TestCutOffFollowerRestartsAtTheLeadersLogStart(t *testing.T) {
	c := newTestCluster(t, 2, 1, 2, 3)
	c.handFollowers = false
	c.commit(assignedTopicRecord("r", nil, pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)))
	leader := c.nodes[1]
	requireCode(t, nil, producePart(t, c.do(leader, produceReq(-1, "r", 0,
		values("a", "b")))).ErrorCode)
	c.advance(time.Second)

	c.cutOff(3)
	slow := produceReq(-1, "r", 0, values("c"))
	slow.TimeoutMillis = 120_000
	id := leader.send(slow)
	c.advance(46 * time.Second)
	require.Equal(t, ids(1, 2), c.isr("r", 0), "node 3 dropped")
	resp, answered := leader.reply(id)
	require.True(t, answered)
	requireCode(t, nil, producePart(t, resp).ErrorCode)
	for _, v := range []string{"d", "e"} {
		requireCode(t, nil, producePart(t, c.do(leader, produceReq(-1, "r", 0,
			values(v)))).ErrorCode)
	}
	// Answered once node 2, the other ISR member, reported the new start with a fetch.
	del := leader.send(deleteRecordsReq("r", 0, 4))
	c.advance(time.Second)
	resp, answered = leader.reply(del)
	require.True(t, answered)
	dr := resp.(*kmsg.DeleteRecordsResponse)
	requireCode(t, nil, dr.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, int64(4), c.nodes[2].b.replicas[tp("r", 0)].StartOffset())
	require.Equal(t, int64(4), leader.b.replicas[tp("r", 0)].StartOffset())
	require.Equal(t, int64(2), c.nodes[3].b.replicas[tp("r", 0)].EndOffset())

	c.heal(3)
	c.advance(5 * time.Second)
	f := c.nodes[3].b.replicas[tp("r", 0)]
	require.Equal(t, int64(4), f.StartOffset(), "restarted at the leader's log start")
	require.Equal(t, ids(1, 2, 3), c.isr("r", 0), "node 3 back in the ISR")
	l := leader.b.replicas[tp("r", 0)]
	require.Equal(t, l.EndOffset(), f.EndOffset())
	require.Equal(t, l.HighWatermark(), f.HighWatermark())
	require.Equal(t, l.ReadForFollower(4, 1<<20).Records, f.ReadForFollower(4, 1<<20).Records)
}

// do sends req to h and delivers the cluster until it is answered.
func (c *testCluster) do(h *harness, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	id := h.send(req)
	c.settle()
	resp, ok := h.reply(id)
	require.True(c.t, ok, "%T not answered", req)
	return resp
}
