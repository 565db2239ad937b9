package raftmeta

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestAWipedVoterDoesNotVoteUntilCaughtUp is the hazard itself. Voters A (leader), B,
// C: B goes down, A and C commit records B never sees, A goes down, C loses its raft
// store. B and the wiped C are a majority: if C voted, B (whose log lacks the commits)
// would lead and the commits would be lost. C probes B, learns the quorum has a log,
// does not bootstrap and refuses B's votes: no leader while A is down. A returns and
// leads, C catches up, clears its gate and votes again: with A gone once more, B and
// C elect a leader, and the commits are still there.
func TestAWipedVoterDoesNotVoteUntilCaughtUp(t *testing.T) {
	c, err := newTestCluster(3, steadyTiming(), newStats())
	require.NoError(t, err)
	defer c.close()
	core, logs := observer.New(zapcore.InfoLevel)
	wipedLog := zap.New(core)
	var wiped int32 = -1
	c.logOf = func(id int32) *zap.Logger {
		if id == wiped {
			return wipedLog.With(zap.Int32("node", id))
		}
		return c.lg.With(zap.Int32("node", id))
	}
	boxes := []*inbox{{}, {}, {}}
	for i := 0; i < 3; i++ {
		c.boot(i, boxes[i].deliver)
	}
	require.True(t, waitFor(settleBound, func() bool { return c.leaderOf() >= 0 }),
		"no leader elected")
	a := c.leaderOf()
	b, cc := (a+1)%3, (a+2)%3
	propose := c.proposeTopic
	committed := func(on int, tok uint64) { awaitCommitted(t, boxes[on], on, tok) }
	propose(a, 1)
	committed(a, 1)
	require.True(t, waitFor(settleBound, func() bool { return len(boxes[b].applied()) == 1 }),
		"B did not apply the first record")

	// B goes; A and C commit two records B never sees.
	c.crash(b)
	propose(a, 2)
	propose(a, 3)
	committed(a, 3)
	// A goes; C loses its raft store.
	c.crash(a)
	c.crash(cc)
	require.NoError(t, os.RemoveAll(c.nodes[cc].dir))

	boxes[b], boxes[cc] = &inbox{}, &inbox{}
	c.boot(b, boxes[b].deliver)
	wiped = c.nodes[cc].id
	c.boot(cc, boxes[cc].deliver)
	mc := c.nodes[cc].m
	require.NotNil(t, mc.gate, "the wiped voter runs behind the vote gate")
	target, err := readVotesAfter(mc.store)
	require.NoError(t, err)
	require.Greater(t, target, uint64(1), "the gate index is stored")
	require.Equal(t, 1, logs.FilterMessageSnippet("it will not vote until it has caught up").
		Len())

	// B campaigns for several election timeouts: C refuses, nobody leads.
	deadline := time.Now().Add(8 * c.timing.Election)
	for time.Now().Before(deadline) {
		require.Negative(t, c.leaderOf(), "a leader was elected with the wiped voter's vote")
		time.Sleep(20 * time.Millisecond)
	}
	require.Positive(t, mc.gate.refused.Load(), "B's vote requests never reached the gate")
	require.Less(t, mc.r.LastIndex(), target)

	// A returns and leads; C catches up and votes again.
	boxes[a] = &inbox{}
	c.boot(a, boxes[a].deliver)
	require.True(t, waitFor(settleBound, func() bool { return c.leaderOf() == a }),
		"A, which holds the commits, did not lead")
	require.True(t, waitFor(settleBound, func() bool { return !mc.gate.shut.Load() }),
		"the wiped voter never opened its gate")
	target, err = readVotesAfter(mc.store)
	require.NoError(t, err)
	require.Zero(t, target, "the gate index is cleared")
	require.Equal(t, 1, logs.FilterMessageSnippet("it votes again").Len())

	// A goes again: B and C elect a leader (C's vote counts), which keeps the commits.
	c.crash(a)
	var next int
	require.True(t, waitFor(settleBound, func() bool {
		next = c.leaderOf()
		return next >= 0
	}), "B and the caught-up voter elected no leader")
	propose(next, 4)
	committed(next, 4)
	require.True(t, waitFor(settleBound, func() bool {
		var topics []string
		for _, ap := range boxes[b].applied() {
			topics = append(topics, ap.Record.Topic)
		}
		return fmt.Sprint(topics) == "[t2 t3 t4]"
	}), "B did not apply the records committed while it was down")
}

// TestAProbeAnswersTheLastIndex: a probe (join request with Probe) is answered with the
// node's raft LastIndex, by a follower as by the leader, and changes no membership
// even when it names an unknown node.
func TestAProbeAnswersTheLastIndex(t *testing.T) {
	c, err := newTestCluster(3, steadyTiming(), newStats())
	require.NoError(t, err)
	defer c.close()
	for i := 0; i < 3; i++ {
		c.boot(i, (&inbox{}).deliver)
	}
	require.True(t, waitFor(settleBound, func() bool { return c.leaderOf() >= 0 }),
		"no leader elected")
	lead := c.leaderOf()
	require.True(t, waitFor(settleBound, func() bool {
		return c.nodes[lead].m.Raft().LastIndex() > 1
	}), "the leader appended no no-op")
	quit := make(chan struct{})
	for i := 0; i < 3; i++ {
		ans, err := askJoin(c.nodes[i].addr, joinRequest{ID: 9, Addr: "127.0.0.1:2",
			Probe: true}, nil, quit)
		require.NoError(t, err)
		require.True(t, ans.OK, ans.Error)
		require.GreaterOrEqual(t, ans.LastIndex, uint64(1), "the bootstrap entry at least")
		require.LessOrEqual(t, ans.LastIndex, c.nodes[i].m.Raft().LastIndex())
	}
	ans, err := askJoin(c.nodes[lead].addr, joinRequest{ID: 9, Addr: "127.0.0.1:2",
		Probe: true}, nil, quit)
	require.NoError(t, err)
	require.Greater(t, ans.LastIndex, uint64(1), "the leader's no-op is in its log")
	require.NotContains(t, c.suffrages(lead), int32(9), "a probe adds nobody")
}
