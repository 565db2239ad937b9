package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
)

// Three brokers with their fetchers and a replicated __consumer_offsets (one
// partition, RF 3): the group coordinator is the partition's leader and moves with it.
// Node 1 coordinates; its node dies right after two commits were acknowledged (the
// followers have the records but have not learned the high-water mark yet); node 2 is
// elected, loads (COORDINATOR_LOAD_IN_PROGRESS until its log is held by its ISR) and
// serves the last acknowledged offset; the member heartbeats, rejoins and commits
// there. Node 1 restarts as a follower (NOT_COORDINATOR); leadership moves back to
// it: node 2 unloads (a parked JoinGroup is answered NOT_COORDINATOR) and node 1
// serves the latest offset. No acknowledged offset is lost, none goes back.
func TestGroupCoordinatorMovesWithTheOffsetsLeader(t *testing.T) {
	c := newTestClusterWith(t, []func(*Config){groupOpts}, 2, 1, 2, 3)
	c.handFollowers = false
	c.commit(assignedTopicRecord(group.OffsetsTopic, nil,
		pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)),
		assignedTopicRecord("t", nil, pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)))
	n1, n2, n3 := c.nodes[1], c.nodes[2], c.nodes[3]
	for _, h := range []*harness{n1, n2, n3} {
		node, port, code := h.coordinatorFor("g")
		requireCode(t, nil, code)
		require.Equal(t, int32(1), node, "node %d names the offsets leader", h.cfg.NodeID)
		if h != n1 {
			require.Equal(t, int32(9091), port, "node 1's registered address")
		}
	}
	// Group requests elsewhere: NOT_COORDINATOR.
	requireCode(t, kerr.NotCoordinator, commitCodes(n2.do(commitReq("g", -1, "", "t",
		int32(0), int64(1))))[0])
	_, code := n3.fetchOffset(maxVersion(kmsg.OffsetFetch), "g", "t", 0)
	requireCode(t, kerr.NotCoordinator, code)
	jr := n2.do(n2.member(9, "g", "t").joinReq()).(*kmsg.JoinGroupResponse)
	requireCode(t, kerr.NotCoordinator, jr.ErrorCode)

	// A member joins and syncs on node 1 (the generation's record replicated first),
	// and commits twice.
	m := n1.member(7, "g", "t")
	c.joinAndSync(m)
	require.Equal(t, int32(1), m.gen)
	requireCode(t, nil, c.commitOn(n1, m, 5))
	requireCode(t, nil, c.commitOn(n1, m, 8))
	requireOffset(t, n1, "g", 8)

	// Node 1 dies. Node 3 is slow to come to the new leader: node 2 loads until its
	// ISR holds its log, and says so.
	c.kill(1)
	c.cutOff(3)
	c.commit(changeRecord(group.OffsetsTopic, 0, pstate(ids(1, 2, 3), ids(2, 3), 2, 1, 1)),
		changeRecord("t", 0, pstate(ids(1, 2, 3), ids(2, 3), 2, 1, 1)))
	_, code = n2.fetchOffset(maxVersion(kmsg.OffsetFetch), "g", "t", 0)
	requireCode(t, kerr.CoordinatorLoadInProgress, code)
	requireCode(t, kerr.CoordinatorLoadInProgress, listGroupsCode(n2))
	node, _, code := n2.coordinatorFor("g")
	requireCode(t, nil, code)
	require.Equal(t, int32(2), node, "a loading coordinator is named")
	c.heal(3)
	c.advance(2 * time.Second)
	requireOffset(t, n2, "g", 8)
	node, port, code := n3.coordinatorFor("g")
	requireCode(t, nil, code)
	require.Equal(t, []int32{2, 9092}, []int32{node, port}, "node 2's registered address")

	// The member continues on node 2: its session restarted at the load; it rejoins
	// (a new generation) and commits there.
	m.h = n2
	requireCode(t, nil, m.heartbeat())
	c.joinAndSync(m)
	require.Equal(t, int32(2), m.gen)
	requireCode(t, nil, c.commitOn(n2, m, 10))
	requireOffset(t, n2, "g", 10)

	// Node 1 restarts (losing what it had not synced) and follows node 2: it does not
	// coordinate, and joins the ISR once caught up.
	c.restart(1)
	_, code = n1.fetchOffset(maxVersion(kmsg.OffsetFetch), "g", "t", 0)
	requireCode(t, kerr.NotCoordinator, code)
	c.advance(5 * time.Second)
	require.Equal(t, ids(1, 2, 3), c.isr(group.OffsetsTopic, 0))

	// A second member's join is parked on node 2 (the group rebalances) when the
	// leadership moves back to node 1: it is answered NOT_COORDINATOR, node 2 unloads.
	m2 := n2.member(8, "g", "t")
	parked := m2.sendJoin()
	c.settle()
	r, answered := n2.reply(parked)
	require.False(t, answered, "%+v", r)
	s, _, _ := n2.b.image.Partition(group.OffsetsTopic, 0)
	c.commit(changeRecord(group.OffsetsTopic, 0, pstate(ids(1, 2, 3), s.ISR, 1, 2,
		s.PartitionEpoch+1)))
	requireCode(t, kerr.NotCoordinator, m2.joined(parked).ErrorCode)
	require.Nil(t, n2.b.groups.coord.Group("g"), "node 2 unloaded the group")
	c.advance(time.Second)
	requireOffset(t, n1, "g", 10)
	_, code = n2.fetchOffset(maxVersion(kmsg.OffsetFetch), "g", "t", 0)
	requireCode(t, kerr.NotCoordinator, code)
	m.h = n1
	c.joinAndSync(m)
	requireCode(t, nil, c.commitOn(n1, m, 11))
	requireOffset(t, n1, "g", 11)

	// The topic is deleted (by whichever node): its coordinator removes its offsets.
	c.commit(meta.Record{Kind: meta.KindTopicDeleted, Topic: "t", TopicID: topicIDOf("t")})
	require.Empty(t, n1.b.groups.coord.Offsets("g"))
}

// An offset commit is acknowledged only once the offsets partition's ISR holds it
// (the mutant broker/offset-commit-before-isr answers it once the leader's own log
// has it), so it survives the leader's death; and min.insync.replicas of the offsets
// topic holds for commits as for acks=all produces.
func TestOffsetCommitWaitsForTheISR(t *testing.T) {
	c := newTestClusterWith(t, []func(*Config){groupOpts}, 2, 1, 2, 3)
	c.handFollowers = false
	c.commit(assignedTopicRecord(group.OffsetsTopic, []meta.Config{{
		Name: "min.insync.replicas", Value: "2"}},
		pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)),
		assignedTopicRecord("t", nil, pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)))
	n1, n2 := c.nodes[1], c.nodes[2]
	simple := &member{h: n1, group: "g", gen: -1}
	requireCode(t, nil, c.commitOn(n1, simple, 5))

	// Its followers cut off, node 1 holds a commit durably but cannot acknowledge it.
	c.cutOff(2)
	c.cutOff(3)
	id := n1.send(commitReq("g", -1, "", "t", int32(0), int64(9)))
	c.settle()
	_, answered := n1.reply(id)
	require.False(t, answered, "acknowledged before the ISR holds it")

	// Node 1 dies; node 2 leads with node 3: the acknowledged offset is there.
	c.kill(1)
	c.heal(2)
	c.heal(3)
	c.commit(changeRecord(group.OffsetsTopic, 0, pstate(ids(1, 2, 3), ids(2, 3), 2, 1, 1)))
	c.advance(2 * time.Second)
	requireOffset(t, n2, "g", 5)

	// min.insync.replicas=2: a commit waiting when the ISR shrinks to node 2 alone is
	// answered COORDINATOR_NOT_AVAILABLE (NOT_ENOUGH_REPLICAS_AFTER_APPEND), and the
	// next is refused before it is written.
	c.cutOff(3)
	simple.h = n2
	id = n2.send(commitReq("g", -1, "", "t", int32(0), int64(12)))
	c.settle()
	_, answered = n2.reply(id)
	require.False(t, answered)
	c.advance(46 * time.Second)
	require.Equal(t, ids(2), c.isr(group.OffsetsTopic, 0))
	r, answered := n2.reply(id)
	require.True(t, answered)
	requireCode(t, kerr.CoordinatorNotAvailable, commitCodes(r)[0])
	end := n2.b.replicas[tp(group.OffsetsTopic, 0)].EndOffset()
	requireCode(t, kerr.CoordinatorNotAvailable, c.commitOn(n2, simple, 13))
	require.Equal(t, end, n2.b.replicas[tp(group.OffsetsTopic, 0)].EndOffset(),
		"nothing appended")
}

// joinAndSync has m join its group and sync as its leader (assigning itself), with
// the cluster delivering in between.
func (c *testCluster) joinAndSync(m *member) {
	c.t.Helper()
	id := m.sendJoin()
	c.settle()
	jr := m.joined(id)
	requireCode(c.t, nil, jr.ErrorCode)
	id = m.sendSync(map[string]string{m.id: "assignment"})
	c.settle()
	requireCode(c.t, nil, m.synced(id).ErrorCode)
}

// commitOn commits offset for m's group on partition t-0 through h, delivering the
// cluster until it is answered, and returns its code.
func (c *testCluster) commitOn(h *harness, m *member, offset int64) int16 {
	c.t.Helper()
	id := h.sendOn(m.conn, commitReq(m.group, m.gen, m.id, "t", int32(0), offset))
	c.settle()
	r, ok := h.reply(id)
	require.True(c.t, ok, "commit of %d not answered", offset)
	return commitCodes(r)[0]
}

// requireOffset checks the committed offset of group on t-0 as h serves it.
func requireOffset(t *testing.T, h *harness, g string, want int64) {
	t.Helper()
	off, code := h.fetchOffset(maxVersion(kmsg.OffsetFetch), g, "t", 0)
	requireCode(t, nil, code)
	require.Equal(t, want, off, "node %d", h.cfg.NodeID)
}

func listGroupsCode(h *harness) int16 {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = maxVersion(kmsg.ListGroups)
	return h.do(req).(*kmsg.ListGroupsResponse).ErrorCode
}

// kill stops node n: it is no longer stepped, gets no metadata, and requests to and
// from it wait (as cutOff) until restart.
func (c *testCluster) kill(n int32) {
	c.cutOff(n)
	kept := c.ids[:0]
	for _, id := range c.ids {
		if id != n {
			kept = append(kept, id)
		}
	}
	c.ids = kept
}

// restart brings a killed node back as a crash would: it loses what it had not
// synced, catches up with the metadata committed meanwhile, and its clock joins the
// others'. Its old incarnation's requests are dropped.
func (c *testCluster) restart(n int32) {
	h, live := c.nodes[n], c.nodes[c.ids[0]]
	h.env.committed = append(h.env.committed, live.env.committed[len(h.env.committed):]...)
	h.now = live.now
	h.env.peerReqs = nil
	drop := func(calls []peerCall) []peerCall {
		kept := calls[:0]
		for _, call := range calls {
			if call.from != n {
				kept = append(kept, call)
			}
		}
		return kept
	}
	c.cutHeld, c.inflight = drop(c.cutHeld), drop(c.inflight)
	// What the old incarnation was serving is never answered: the callers' transport
	// fails it (E7).
	kept := c.inflight[:0]
	var lost []peerCall
	for _, call := range c.inflight {
		if call.p.Node == n {
			lost = append(lost, call)
			continue
		}
		kept = append(kept, call)
	}
	c.inflight = kept
	for _, call := range lost {
		c.nodes[call.from].step(PeerReply{Node: n, ID: call.p.ID,
			Err: errors.New("test: node restarted")})
	}
	h.crash()
	h.step(MetaLeaderChanged{Leader: c.controller, Epoch: 2})
	c.ids = append(c.ids, n)
	c.heal(n)
}

// An offsets partition without a leader has no coordinator: FindCoordinator and group
// requests get COORDINATOR_NOT_AVAILABLE everywhere; so does a leader that is fenced.
// A coordinator that restarts still leading loads its partition again at start.
func TestCoordinatorOfALeaderlessOffsetsPartition(t *testing.T) {
	c := newTestClusterWith(t, []func(*Config){groupOpts}, 2, 1, 2, 3)
	c.handFollowers = false
	c.commit(assignedTopicRecord(group.OffsetsTopic, nil,
		pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)),
		assignedTopicRecord("t", nil, pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)))
	n1 := c.nodes[1]
	simple := &member{h: n1, group: "g", gen: -1}
	requireCode(t, nil, c.commitOn(n1, simple, 3))

	c.commit(changeRecord(group.OffsetsTopic, 0, pstate(ids(1, 2, 3), ids(1), -1, 1, 1)))
	for _, id := range c.ids {
		_, _, code := c.nodes[id].coordinatorFor("g")
		requireCode(t, kerr.CoordinatorNotAvailable, code)
	}
	requireCode(t, kerr.CoordinatorNotAvailable, c.commitOn(n1, simple, 4))
	_, code := n1.fetchOffset(maxVersion(kmsg.OffsetFetch), "g", "t", 0)
	requireCode(t, kerr.CoordinatorNotAvailable, code)

	// Node 1 leads again, and is fenced: others cannot name it.
	c.commit(changeRecord(group.OffsetsTopic, 0, pstate(ids(1, 2, 3), ids(1), 1, 2, 2)))
	requireOffset(t, n1, "g", 3)
	c.commit(meta.Record{Kind: meta.KindBrokerChange, NodeID: 1, BrokerEpoch: 100,
		BrokerState: meta.BrokerFenced})
	_, _, code = c.nodes[2].coordinatorFor("g")
	requireCode(t, kerr.CoordinatorNotAvailable, code)

	// It restarts, still the leader by the image: it loads at start.
	c.kill(1)
	c.restart(1)
	requireOffset(t, n1, "g", 3)
	requireCode(t, nil, c.commitOn(n1, simple, 6))
	requireOffset(t, n1, "g", 6)
}

// Each offsets partition moves on its own: moving one partition's leadership unloads
// only its groups; the groups of the other stay served, with their members, where they
// were; ListGroups on each node lists the groups it coordinates.
func TestOffsetsPartitionsMoveIndependently(t *testing.T) {
	c := newTestClusterWith(t, []func(*Config){groupOpts}, 2, 1, 2, 3)
	c.handFollowers = false
	c.commit(assignedTopicRecord(group.OffsetsTopic, nil,
		pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0), pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)),
		assignedTopicRecord("t", nil, pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)))
	n1, n2 := c.nodes[1], c.nodes[2]
	var in0, in1 string
	for i := 0; in0 == "" || in1 == ""; i++ {
		id := string(rune('a'+i%26)) + string(rune('a'+i/26))
		if group.Partition(id, 2) == 0 && in0 == "" {
			in0 = id
		} else if group.Partition(id, 2) == 1 && in1 == "" {
			in1 = id
		}
	}
	m0, m1 := n1.member(7, in0, "t"), n1.member(8, in1, "t")
	c.joinAndSync(m0)
	c.joinAndSync(m1)
	requireCode(t, nil, c.commitOn(n1, m0, 4))
	requireCode(t, nil, c.commitOn(n1, m1, 6))

	c.commit(changeRecord(group.OffsetsTopic, 0, pstate(ids(1, 2, 3), ids(1, 2, 3), 2, 1, 1)))
	c.advance(time.Second)
	_, code := n1.fetchOffset(maxVersion(kmsg.OffsetFetch), in0, "t", 0)
	requireCode(t, kerr.NotCoordinator, code)
	requireOffset(t, n2, in0, 4)
	requireOffset(t, n1, in1, 6)
	requireCode(t, nil, m1.heartbeat())
	require.Equal(t, []string{in1}, listGroups(t, n1))
	require.Equal(t, []string{in0}, listGroups(t, n2))
	m0.h = n2
	requireCode(t, nil, m0.heartbeat())
	requireCode(t, nil, c.commitOn(n2, m0, 5))
	requireOffset(t, n2, in0, 5)
}

func listGroups(t *testing.T, h *harness) []string {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = maxVersion(kmsg.ListGroups)
	resp := h.do(req).(*kmsg.ListGroupsResponse)
	requireCode(t, nil, resp.ErrorCode)
	var out []string
	for _, g := range resp.Groups {
		out = append(out, g.Group)
	}
	return out
}
