package raftmeta

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// inbox collects one node's inputs for a hand-written test.
type inbox struct {
	mu  sync.Mutex
	ins []broker.Input
}

func (b *inbox) deliver(in broker.Input) {
	b.mu.Lock()
	b.ins = append(b.ins, in)
	b.mu.Unlock()
}

func (b *inbox) answers() map[uint64]broker.MetaAnswer {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[uint64]broker.MetaAnswer{}
	for _, in := range b.ins {
		if a, ok := in.(broker.MetaAnswer); ok {
			out[a.Token] = a
		}
	}
	return out
}

// waitFor polls cond for at most d; false when it never held.
func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// leaderOf is the index of the node all up nodes agree leads, or -1.
func (c *testCluster) leaderOf() int {
	for i, nd := range c.nodes {
		if nd.m == nil {
			continue
		}
		if l, _ := nd.m.Leader(); l == nd.id {
			return i
		}
	}
	return -1
}

// TestLaggingFollowerRestartsFromAnInstalledSnapshot: a follower down while the leader
// commits records and compacts its log behind a snapshot can only catch up from that
// snapshot. Installing it would skip MetaApplied the port must deliver, so the
// follower's incarnation ends (OnFatal); restarted, its Start is the snapshot.
func TestLaggingFollowerRestartsFromAnInstalledSnapshot(t *testing.T) {
	// The script proposes through one leader and expects every proposal committed: a
	// steady lease, or a loaded machine's stalls move the leadership mid-script (seen at
	// load 20).
	timing := SteadyTestTiming()
	timing.TrailingLogs = 0 // compact everything a snapshot covers
	c, err := newTestCluster(3, timing, newStats())
	require.NoError(t, err)
	defer c.close()
	boxes := []*inbox{{}, {}, {}}
	for i := range c.nodes {
		c.boot(i, boxes[i].deliver)
	}
	require.True(t, waitFor(settleBound, func() bool { return c.leaderOf() >= 0 }),
		"no leader elected")
	lead := c.leaderOf()
	lag := (lead + 1) % 3
	c.crash(lag)

	const n = 6
	for tok := uint64(1); tok <= n; tok++ {
		c.nodes[lead].m.Propose(meta.Record{Kind: meta.KindTopicCreated,
			Topic: fmt.Sprint("t", tok), Partitions: 1}, tok)
	}
	require.True(t, waitFor(settleBound, func() bool { return len(boxes[lead].answers()) == n }),
		"proposals not answered")
	for tok, a := range boxes[lead].answers() {
		require.Equal(t, broker.MetaCommitted, a.Outcome, "token %d: %v", tok, a.Err)
	}
	require.NoError(t, c.nodes[lead].m.Snapshot())

	boxes[lag] = &inbox{}
	st := c.boot(lag, boxes[lag].deliver)
	require.Zero(t, st.LastIndex(), "the lagging node applied nothing before")
	fatal := func() error {
		c.nodes[lag].mu.Lock()
		defer c.nodes[lag].mu.Unlock()
		return c.nodes[lag].fatal
	}
	require.True(t, waitFor(settleBound, func() bool { return fatal() != nil }),
		"the installed snapshot did not end the incarnation")
	require.ErrorContains(t, fatal(), "restart the node")
	boxes[lag].mu.Lock()
	for _, in := range boxes[lag].ins {
		_, applied := in.(broker.MetaApplied)
		require.False(t, applied, "a MetaApplied past a gap")
	}
	boxes[lag].mu.Unlock()

	c.crash(lag)
	c.nodes[lag].fatal = nil
	st = c.boot(lag, (&inbox{}).deliver)
	require.Equal(t, uint64(n), st.LastIndex())
	require.Equal(t, uint64(n), st.SnapshotIndex, "Start is the installed snapshot")
	require.Len(t, st.Snapshot, n)
	require.Equal(t, "t1", st.Snapshot[0].Topic)
}

// TestCloseWithProposalsInFlightReturns: a leader that lost its quorum holds
// proposals it cannot commit; closing it must not wait for them, and nothing is
// delivered after Close.
func TestCloseWithProposalsInFlightReturns(t *testing.T) {
	c, err := newTestCluster(3, TestTiming(), newStats())
	require.NoError(t, err)
	defer c.close()
	boxes := []*inbox{{}, {}, {}}
	for i := range c.nodes {
		c.boot(i, boxes[i].deliver)
	}
	require.True(t, waitFor(settleBound, func() bool { return c.leaderOf() >= 0 }),
		"no leader elected")
	lead := c.leaderOf()
	for i := range c.nodes {
		if i != lead {
			c.crash(i)
		}
	}
	for tok := uint64(1); tok <= 20; tok++ {
		c.nodes[lead].m.Propose(meta.Record{Kind: meta.KindTopicCreated,
			Topic: fmt.Sprint("t", tok), Partitions: 1}, tok)
	}
	done := make(chan struct{})
	go func() {
		c.crash(lead)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(settleBound):
		t.Fatal("Close did not return with proposals in flight")
	}
	boxes[lead].mu.Lock()
	n := len(boxes[lead].ins)
	boxes[lead].mu.Unlock()
	time.Sleep(2 * c.timing.Election)
	boxes[lead].mu.Lock()
	defer boxes[lead].mu.Unlock()
	require.Len(t, boxes[lead].ins, n, "inputs delivered after Close")
}

// applied returns the MetaApplied a node was delivered, in order.
func (b *inbox) applied() []broker.MetaApplied {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []broker.MetaApplied
	for _, in := range b.ins {
		if a, ok := in.(broker.MetaApplied); ok {
			out = append(out, a)
		}
	}
	return out
}

func steadyTiming() Timing { return SteadyTestTiming() }

// TestNonvoterFollowsTheLog: a node outside the voter list does not bootstrap; once the
// leader adds it as a non-voter it applies every committed record at the voters'
// indexes, answers its own proposals NotLeader with the leader's id, keeps following
// across its restart, and never leads.
func TestNonvoterFollowsTheLog(t *testing.T) {
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
	answered := func(on int, tok uint64) broker.MetaAnswer {
		require.True(t, waitFor(settleBound, func() bool {
			_, ok := boxes[on].answers()[tok]
			return ok
		}), "proposal %d on node %d not answered", tok, on)
		return boxes[on].answers()[tok]
	}
	for tok := uint64(1); tok <= 3; tok++ {
		propose(lead, tok)
	}
	require.Equal(t, broker.MetaCommitted, answered(lead, 3).Outcome)

	nv, err := c.addNonvoter()
	require.NoError(t, err)
	st := c.boot(nv, boxes[nv].deliver)
	require.Zero(t, st.LastIndex())
	require.NoError(t, c.nodes[lead].m.AddNonvoter(c.nodes[nv].id, c.nodes[nv].addr,
		settleBound))
	require.True(t, waitFor(settleBound, func() bool { return len(boxes[nv].applied()) == 3 }),
		"the non-voter did not catch up")
	require.Equal(t, boxes[lead].applied(), boxes[nv].applied(),
		"the same records at the same indexes")

	propose(nv, 10)
	a := answered(nv, 10)
	require.Equal(t, broker.MetaNotLeader, a.Outcome)
	require.Equal(t, c.nodes[lead].id, a.Leader, "the hint names the leader")

	c.crash(nv)
	boxes[nv] = &inbox{}
	st = c.boot(nv, boxes[nv].deliver)
	require.Equal(t, uint64(3), st.LastIndex(), "its Start holds what it applied")
	propose(lead, 4)
	require.Equal(t, broker.MetaCommitted, answered(lead, 4).Outcome)
	require.True(t, waitFor(settleBound, func() bool { return len(boxes[nv].applied()) == 1 }),
		"the restarted non-voter does not follow")
	require.Equal(t, uint64(4), boxes[nv].applied()[0].Index)

	// The leader goes; a voter takes over, never the non-voter.
	c.crash(lead)
	require.True(t, waitFor(settleBound, func() bool {
		l, _ := c.nodes[nv].m.Leader()
		return l > 0 && l != c.nodes[lead].id
	}), "no new leader")
	l, _ := c.nodes[nv].m.Leader()
	require.NotEqual(t, c.nodes[nv].id, l)
}
