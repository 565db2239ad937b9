package metatest

import (
	"fmt"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// Cluster is the adapters of one metadata quorum, one per node (0..Size()-1), driven
// by the suite from one goroutine. Each node is up (an incarnation runs) or down.
// Inputs may be delivered from any goroutine, one at a time per node.
type Cluster interface {
	Size() int
	// NodeID is the id node has in MetaLeaderChanged and MetaAnswer.Leader.
	NodeID(node int) int32
	// Boot starts the next incarnation of a down node over its durable state: it
	// returns the node's Start and delivers every later input of the incarnation
	// through deliver, in order (MetaLeaderChanged first, M7).
	Boot(node int, deliver func(broker.Input)) broker.Start
	// Propose is the node's Env.ProposeMeta.
	Propose(node int, rec meta.Record, token uint64)
	// Crash ends the node's incarnation at once: nothing more is delivered to it.
	Crash(node int)
	// Snapshot makes the node snapshot its image and compact its log behind it; false
	// when the adapter has no snapshots.
	Snapshot(node int) (bool, error)
	// Settle returns once done() holds or the adapter's bound passed. done runs on the
	// calling goroutine.
	Settle(done func() bool)
	// Pass lets a little time go by (for the production adapter: about an election).
	Pass()
	Close()
}

// ClusterFactory builds a fresh cluster over empty logs, every node down.
type ClusterFactory func(t *rapid.T) Cluster

// ClusterOptions bound a run.
type ClusterOptions struct {
	MaxActions int // actions per case (default 20)
	// HealTries bounds the proposals tried, once every node is up again, before one
	// must commit (default 20): a quorum that never commits again fails the case.
	HealTries int
}

// RunCluster checks a quorum against the port seen from every node: M1–M7 on each, and
// across nodes that every node applies the same record at the same index (each node's
// log is a prefix of the longest observed), that no record answered NotLeader or
// Rejected ever commits, that each proposer's records commit in its order, that the
// leader epoch increases within each incarnation, that after healing a proposal
// commits and every node catches up, and that a restart's Start holds what was
// applied.
func RunCluster(t *testing.T, f ClusterFactory, opt ClusterOptions) {
	t.Helper()
	if opt.MaxActions == 0 {
		opt.MaxActions = 20
	}
	if opt.HealTries == 0 {
		opt.HealTries = 20
	}
	rapid.Check(t, func(rt *rapid.T) {
		cl := f(rt)
		defer cl.Close()
		c := &clusterChecker{t: rt, c: cl, props: map[uint64]*cprop{}}
		for i := 0; i < cl.Size(); i++ {
			c.nodes = append(c.nodes, &nodeView{})
			c.boot(i)
		}
		for i, n := 0, rapid.IntRange(1, opt.MaxActions).Draw(rt, "actions"); i < n; i++ {
			c.act()
		}
		c.heal(opt.HealTries)
		c.restartAll()
		c.settle()
	})
}

// cprop is what the suite knows of one proposal.
type cprop struct {
	rec      meta.Record
	node     int
	inc      int
	outcome  broker.MetaOutcome
	answered bool
	index    uint64
}

// nodeView is one node as the suite saw it.
type nodeView struct {
	up       bool
	inc      int
	applied  uint64
	epoch    uint64
	leader   bool  // a MetaLeaderChanged was seen this incarnation
	leaderID int32 // the leader it named last
	appliedH map[uint64]bool
	inbox    []broker.Input
	maxOK    uint64 // highest token of this node's whose record is in the log (M5)
}

type clusterChecker struct {
	t     *rapid.T
	c     Cluster
	props map[uint64]*cprop
	next  uint64
	hist  []meta.Record // the committed log, as the longest any node showed

	mu    sync.Mutex // guards nodes' up, inc and inbox, and stale
	nodes []*nodeView
	stale []string // deliveries to incarnations already ended
}

func (c *clusterChecker) deliverer(node, inc int) func(broker.Input) {
	return func(in broker.Input) {
		c.mu.Lock()
		defer c.mu.Unlock()
		v := c.nodes[node]
		if !v.up || v.inc != inc {
			c.stale = append(c.stale, fmt.Sprintf("node %d incarnation %d: %T after it ended",
				node, inc, in))
			return
		}
		v.inbox = append(v.inbox, in)
	}
}

func (c *clusterChecker) act() {
	switch rapid.IntRange(0, 17).Draw(c.t, "action") {
	case 0, 1, 2:
		c.proposeOn(c.drawNode(true))
	case 3, 4, 5, 6:
		c.proposeOn(c.believedLeader())
	case 7, 8:
		c.settle()
	case 9:
		if n := c.drawNode(true); n >= 0 {
			c.crash(n) // it stays down for a while
		}
	case 10:
		if n := c.drawNode(false); n >= 0 {
			c.boot(n)
		}
	case 11:
		if n := c.drawNode(true); n >= 0 {
			c.crash(n)
			c.boot(n)
		}
	case 12:
		c.restartAll()
	case 13:
		if n := c.drawNode(true); n >= 0 {
			c.check()
			if ok, err := c.c.Snapshot(n); ok && err != nil {
				c.t.Logf("snapshot on node %d failed (allowed): %v", n, err)
			}
		}
	case 14:
		if n := c.believedLeader(); n >= 0 {
			c.crash(n) // proposals in flight on a leader: unknown outcomes
		}
	case 15:
		c.awaitLeader()
	case 16:
		c.strandLeader()
	default:
		c.c.Pass()
		c.check()
	}
}

// strandLeader crashes every node but the believed leader, then proposes on it before
// it notices: it appends the records but cannot commit them (unknown outcomes once it
// steps down), and a later leader may commit them or not (M6).
func (c *clusterChecker) strandLeader() {
	n := c.believedLeader()
	if n < 0 {
		return
	}
	for i, v := range c.nodes {
		if i != n && v.up {
			c.crash(i)
		}
	}
	c.proposeOn(n)
}

// awaitLeader waits, when a majority is up, until some up node names an up leader. It
// is no check (the wait may end at the adapter's bound without one): it lets the
// proposals that follow meet a leader.
func (c *clusterChecker) awaitLeader() {
	up := 0
	for _, v := range c.nodes {
		if v.up {
			up++
		}
	}
	if 2*up <= len(c.nodes) {
		c.c.Pass()
		return
	}
	c.c.Settle(func() bool {
		c.check()
		for _, v := range c.nodes {
			for i, w := range c.nodes {
				if v.up && w.up && c.c.NodeID(i) == v.leaderID {
					return true
				}
			}
		}
		return false
	})
}

func (c *clusterChecker) proposeOn(n int) {
	for i, k := 0, rapid.IntRange(1, 3).Draw(c.t, "proposals"); i < k && n >= 0; i++ {
		c.propose(n)
	}
}

// believedLeader is the up node that the most recent MetaLeaderChanged of a drawn up
// node names; -1 when that node knows no leader, or the leader is down.
func (c *clusterChecker) believedLeader() int {
	c.check()
	n := c.drawNode(true)
	if n < 0 {
		return -1
	}
	for i, v := range c.nodes {
		if v.up && c.c.NodeID(i) == c.nodes[n].leaderID {
			return i
		}
	}
	return -1
}

// drawNode draws a node that is up (or down); -1 when there is none.
func (c *clusterChecker) drawNode(up bool) int {
	var ns []int
	for i, v := range c.nodes {
		if v.up == up {
			ns = append(ns, i)
		}
	}
	if len(ns) == 0 {
		return -1
	}
	return rapid.SampledFrom(ns).Draw(c.t, "node")
}

func (c *clusterChecker) propose(n int) uint64 {
	c.next++
	rec := drawRecord(c.t, c.next)
	c.props[c.next] = &cprop{rec: rec, node: n, inc: c.nodes[n].inc}
	c.c.Propose(n, rec, c.next)
	return c.next
}

// unanswered counts the proposals of running incarnations without an answer yet.
func (c *clusterChecker) unanswered() int {
	k := 0
	for _, p := range c.props {
		if v := c.nodes[p.node]; v.up && p.inc == v.inc && !p.answered {
			k++
		}
	}
	return k
}

// settle waits until every proposal of a running incarnation is answered (M3).
func (c *clusterChecker) settle() {
	c.c.Settle(func() bool { c.check(); return c.unanswered() == 0 })
	c.check()
	for tok, p := range c.props {
		if v := c.nodes[p.node]; v.up && p.inc == v.inc && !p.answered {
			c.t.Fatalf("M3: proposal %d on node %d not answered after settling", tok, p.node)
		}
	}
}

func (c *clusterChecker) crash(n int) {
	c.c.Crash(n)
	c.mu.Lock()
	v := c.nodes[n]
	v.up = false
	ins := v.inbox
	v.inbox = nil
	c.mu.Unlock()
	for _, in := range ins {
		c.checkInput(n, in)
	}
}

func (c *clusterChecker) boot(n int) {
	c.check() // the log as the running nodes showed it so far
	c.mu.Lock()
	v := c.nodes[n]
	prev := v.applied
	v.inc++
	v.up = true
	v.applied, v.epoch, v.leader, v.appliedH = 0, 0, false, map[uint64]bool{}
	v.leaderID = -1
	inc := v.inc
	c.mu.Unlock()
	st := c.c.Boot(n, c.deliverer(n, inc))
	c.checkStart(n, st, prev)
}

func (c *clusterChecker) restartAll() {
	for i, v := range c.nodes {
		if v.up {
			c.crash(i)
		}
	}
	for i := range c.nodes {
		c.boot(i)
	}
}

// heal boots every down node, then proposes on every node until a proposal commits,
// and waits until every node has applied the whole log observed.
func (c *clusterChecker) heal(tries int) {
	for i, v := range c.nodes {
		if !v.up {
			c.boot(i)
		}
	}
	c.settle()
	var toks []uint64
	for try := 0; ; try++ {
		if try == tries {
			c.t.Fatalf("liveness: no proposal committed in %d rounds after every node "+
				"was up again", tries)
		}
		for i := range c.nodes {
			toks = append(toks, c.propose(i))
		}
		c.settle()
		if c.anyCommitted(toks) {
			break
		}
		c.c.Pass()
	}
	caughtUp := func() bool {
		c.check()
		for _, v := range c.nodes {
			if v.applied != uint64(len(c.hist)) {
				return false
			}
		}
		return true
	}
	c.c.Settle(caughtUp)
	if !caughtUp() {
		for i, v := range c.nodes {
			c.t.Logf("node %d applied up to %d", i, v.applied)
		}
		c.t.Fatalf("liveness: the nodes did not all apply the %d committed records",
			len(c.hist))
	}
}

func (c *clusterChecker) anyCommitted(toks []uint64) bool {
	for _, tok := range toks {
		if p := c.props[tok]; p.answered && p.outcome == broker.MetaCommitted {
			return true
		}
	}
	return false
}

// checkStart checks node n's Start against the observed log (M1, M2, M6).
// prev is the index the node's previous incarnation had applied up to.
func (c *clusterChecker) checkStart(n int, st broker.Start, prev uint64) {
	if st.SnapshotIndex == 0 && len(st.Snapshot) > 0 {
		c.t.Fatalf("M1: node %d: a snapshot at index 0", n)
	}
	if st.SnapshotIndex > uint64(len(c.hist)) {
		// A snapshot summarises records some node applied, and every node's inputs
		// were checked before this boot: it cannot be past them.
		c.t.Fatalf("M1: node %d: a snapshot at %d, beyond the %d records any node applied",
			n, st.SnapshotIndex, len(c.hist))
	}
	if !imageOf(st.Snapshot).Equal(imageOf(c.hist[:st.SnapshotIndex])) {
		c.t.Fatalf("M1: node %d: the snapshot at %d differs from the image of the records "+
			"it covers", n, st.SnapshotIndex)
	}
	for i, rec := range st.Records {
		idx := st.SnapshotIndex + uint64(i) + 1
		if idx <= uint64(len(c.hist)) {
			if !sameRecord(c.hist[idx-1], rec) {
				c.t.Fatalf("M2: node %d: index %d holds %+v at restart, %+v before", n, idx,
					rec, c.hist[idx-1])
			}
			continue
		}
		if idx != uint64(len(c.hist))+1 {
			c.t.Fatalf("node %d: Start record at %d, but only %d records observed and the "+
				"snapshot covers %d", n, idx, len(c.hist), st.SnapshotIndex)
		}
		c.committed(idx, rec)
	}
	if st.LastIndex() < prev {
		c.t.Fatalf("M2: node %d restarts at %d, below the %d it applied before", n,
			st.LastIndex(), prev)
	}
	c.nodes[n].applied = st.LastIndex()
}

// committed adds the record at idx to the observed log: proposed once, not answered
// NotLeader or Rejected, in its proposer's order (M5).
func (c *clusterChecker) committed(idx uint64, rec meta.Record) {
	if idx != uint64(len(c.hist))+1 {
		c.t.Fatalf("M2: index %d after %d", idx, len(c.hist))
	}
	tok := marker(rec)
	p := c.props[tok]
	switch {
	case p == nil:
		c.t.Fatalf("index %d holds a record nobody proposed: %+v", idx, rec)
	case p.index != 0:
		c.t.Fatalf("proposal %d committed twice: at %d and %d", tok, p.index, idx)
	case p.answered && (p.outcome == broker.MetaNotLeader || p.outcome == broker.MetaRejected):
		c.t.Fatalf("M3: proposal %d answered %v committed at %d", tok, p.outcome, idx)
	case tok < c.nodes[p.node].maxOK:
		c.t.Fatalf("M5: node %d's proposal %d committed at %d after its proposal %d", p.node,
			tok, idx, c.nodes[p.node].maxOK)
	}
	p.index = idx
	c.nodes[p.node].maxOK = tok
	c.hist = append(c.hist, rec)
}

// check takes every node's delivered inputs and checks them in order.
func (c *clusterChecker) check() {
	c.mu.Lock()
	stale := c.stale
	ins := make([][]broker.Input, len(c.nodes))
	for i, v := range c.nodes {
		ins[i], v.inbox = v.inbox, nil
	}
	c.mu.Unlock()
	if len(stale) > 0 {
		c.t.Fatalf("E6: %s", stale[0])
	}
	for n := range ins {
		for _, in := range ins[n] {
			c.checkInput(n, in)
		}
	}
}

func (c *clusterChecker) checkInput(n int, in broker.Input) {
	v := c.nodes[n]
	switch in := in.(type) {
	case broker.MetaLeaderChanged:
		if in.Epoch <= v.epoch {
			c.t.Fatalf("M7: node %d: leader epoch %d after %d", n, in.Epoch, v.epoch)
		}
		v.epoch, v.leader, v.leaderID = in.Epoch, true, in.Leader
	case broker.MetaApplied:
		if in.Index != v.applied+1 {
			c.t.Fatalf("M2: node %d: MetaApplied %d after %d", n, in.Index, v.applied)
		}
		v.applied = in.Index
		v.appliedH[in.Index] = true
		switch {
		case in.Index <= uint64(len(c.hist)):
			if !sameRecord(c.hist[in.Index-1], in.Record) {
				c.t.Fatalf("node %d applies %+v at %d where another applied %+v", n,
					in.Record, in.Index, c.hist[in.Index-1])
			}
		default:
			c.committed(in.Index, in.Record)
		}
	case broker.MetaAnswer:
		c.checkAnswer(n, in)
	default:
		c.t.Fatalf("node %d: unexpected input %T", n, in)
	}
}

func (c *clusterChecker) checkAnswer(n int, in broker.MetaAnswer) {
	v := c.nodes[n]
	p := c.props[in.Token]
	switch {
	case p == nil || p.node != n || p.inc != v.inc:
		c.t.Fatalf("M3: node %d: answer for token %d, not proposed by this incarnation", n,
			in.Token)
	case p.answered:
		c.t.Fatalf("M3: proposal %d answered twice (%v, then %v)", in.Token, p.outcome,
			in.Outcome)
	case !v.leader:
		c.t.Fatalf("M7: node %d: an answer before any MetaLeaderChanged", n)
	}
	p.answered, p.outcome = true, in.Outcome
	switch in.Outcome {
	case broker.MetaCommitted:
		if p.index == 0 || p.index != in.Index || !v.appliedH[in.Index] {
			c.t.Fatalf("M4: proposal %d answered committed at %d, in the log at %d, applied "+
				"here: %v", in.Token, in.Index, p.index, v.appliedH[in.Index])
		}
	case broker.MetaNotLeader, broker.MetaRejected:
		if p.index != 0 {
			c.t.Fatalf("M3: proposal %d answered %v but committed at %d", in.Token,
				in.Outcome, p.index)
		}
	case broker.MetaUnknown:
	default:
		c.t.Fatalf("M3: proposal %d: unknown outcome %d", in.Token, in.Outcome)
	}
}
