package raftmeta

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// suffrages is node i's view of the raft configuration: node id -> suffrage.
func (c *testCluster) suffrages(i int) map[int32]raft.ServerSuffrage {
	f := c.nodes[i].m.Raft().GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	out := map[int32]raft.ServerSuffrage{}
	for _, s := range f.Configuration().Servers {
		out[nodeOf(s.ID)] = s.Suffrage
	}
	return out
}

// TestANonvoterJoinsByItself: a node outside --voters asks the voters over the quorum
// transport until the leader adds it (nobody calls AddNonvoter for it); it then
// applies the log, keeps its membership across its restart (no second join) and
// across a change of leader, and never votes nor leads.
func TestANonvoterJoinsByItself(t *testing.T) {
	c, err := newTestCluster(3, steadyTiming(), newStats())
	require.NoError(t, err)
	defer c.close()
	boxes := []*inbox{{}, {}, {}, {}}
	for i := 0; i < 3; i++ {
		c.boot(i, boxes[i].deliver)
	}
	require.True(t, waitFor(settleBound, func() bool { return c.leaderOf() >= 0 }),
		"no leader elected")
	lead := c.leaderOf()
	propose := c.proposeTopic
	committed := func(on int, tok uint64) { awaitCommitted(t, boxes[on], on, tok) }
	propose(lead, 1)
	propose(lead, 2)
	committed(lead, 2)

	nv, err := c.addNonvoter()
	require.NoError(t, err)
	c.boot(nv, boxes[nv].deliver)
	require.True(t, waitFor(settleBound, func() bool { return len(boxes[nv].applied()) == 2 }),
		"the non-voter did not join and catch up")
	require.Equal(t, raft.Nonvoter, c.suffrages(lead)[c.nodes[nv].id])

	c.crash(nv)
	boxes[nv] = &inbox{}
	st := c.boot(nv, boxes[nv].deliver)
	require.Equal(t, uint64(2), st.LastIndex())
	require.True(t, c.nodes[nv].m.member(), "its membership is in its own log")

	// The leader goes; a voter takes over and the non-voter follows it.
	c.crash(lead)
	var next int
	require.True(t, waitFor(settleBound, func() bool {
		next = c.leaderOf()
		return next >= 0 && next != nv
	}), "no new leader among the voters")
	propose(next, 3)
	committed(next, 3)
	require.True(t, waitFor(settleBound, func() bool { return len(boxes[nv].applied()) == 1 }),
		"the non-voter does not follow the new leader")
	require.Equal(t, raft.Nonvoter, c.suffrages(next)[c.nodes[nv].id], "it never votes")
	l, _ := c.nodes[nv].m.Leader()
	require.NotEqual(t, c.nodes[nv].id, l)
}

// TestAJoinCannotTouchAVoter: a join naming a voter's id (with another address) is
// refused and leaves the configuration as it was; a follower answers with the leader's
// address.
func TestAJoinCannotTouchAVoter(t *testing.T) {
	c, err := newTestCluster(3, steadyTiming(), newStats())
	require.NoError(t, err)
	defer c.close()
	for i := 0; i < 3; i++ {
		c.boot(i, (&inbox{}).deliver)
	}
	require.True(t, waitFor(settleBound, func() bool { return c.leaderOf() >= 0 }),
		"no leader elected")
	lead := c.leaderOf()
	other := (lead + 1) % 3
	quit := make(chan struct{})
	ans, err := askJoin(c.nodes[lead].addr, joinRequest{ID: c.nodes[other].id,
		Addr: "127.0.0.1:1"}, nil, quit)
	require.NoError(t, err)
	require.False(t, ans.OK)
	require.Contains(t, ans.Error, "is a voter")
	f := c.nodes[lead].m.Raft().GetConfiguration()
	require.NoError(t, f.Error())
	for _, s := range f.Configuration().Servers {
		require.NotEqual(t, raft.ServerAddress("127.0.0.1:1"), s.Address)
	}

	// The follower names the leader once it has heard from it (under -race its first
	// append can come after the leader already counts itself elected).
	require.True(t, waitFor(settleBound, func() bool {
		l, _ := c.nodes[other].m.Leader()
		return l == c.nodes[lead].id
	}), "the follower never learned the leader")
	ans, err = askJoin(c.nodes[other].addr, joinRequest{ID: 9, Addr: "127.0.0.1:2"}, nil, quit)
	require.NoError(t, err)
	require.False(t, ans.OK)
	require.Equal(t, c.nodes[lead].addr, ans.Leader, "a follower names the leader")

	ans, err = askJoin(c.nodes[lead].addr, joinRequest{ID: 9, Addr: "nonsense"}, nil, quit)
	require.NoError(t, err)
	require.False(t, ans.OK, "a malformed address is refused")
}
