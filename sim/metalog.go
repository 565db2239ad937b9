package sim

import (
	"errors"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/disk"
	"github.com/sluicemq/sluice/linearizability"
)

// metaLog is the simulator's model of the metadata port (core/broker env.go, M1–M7):
// one log that every node follows, single-node leadership (each node leads from its
// Start, epoch 1). A proposal commits after a small latency, in proposal order, and is
// durable once committed; every live node then gets MetaApplied, the proposer before
// its answer "committed at N". The awkward cases:
//   - MetaErrors spells (Faults.MetaErrors): a proposal is answered Rejected, a
//     definite failure; its record never commits (checked: failedIDs).
//   - Unknown outcome (Faults.MetaUnknownChance): the proposer is answered Unknown and
//     the record then commits later or never does. A late record commits at a drawn
//     time, or at once when a later proposal commits (log order is proposal order,
//     M5), so a retry checked against an image without it may commit after it and
//     not apply (the broker answers that retry with an error).
//   - A crash of the proposer: it hears nothing; a random prefix of its pending
//     proposals commits (the quorum got them) and the rest are lost; the restart's
//     Start says which (M6).
//
// The model runs in a World; its conformance test (metalog_conformance_test.go) runs
// it in a bare one, through the same metaNode interface the nodes implement.
type metaLog struct {
	w       *World
	log     *disk.MetaLog
	tail    int64
	pending []*proposal
	late    []*proposal // answered Unknown, to commit later, in proposal order
	nodes   []metaNode  // every node, in id order: each live one gets every MetaApplied
	r       *Rand
	errR    *Rand // MetaErrors draws, a stream of its own so other draws do not shift
	unkR    *Rand // unknown-outcome draws, likewise
	// failedIDs holds the topic ids of topic records whose proposal failed: a failed
	// proposal must leave no trace, so none of them may ever be committed.
	failedIDs map[[16]byte]bool
	// topics indexes the committed topic records, to check what brokers report.
	topics map[string]*committedTopic
	// claimCommitted is a mutant for the checker's own test: a failed proposal is
	// reported to the broker as applied and committed though the log did not append
	// it. shift keeps the indexes the node sees gapless after such a phantom record.
	claimCommitted bool
	shift          map[int32]uint64

	// The quorum (metaquorum.go), used when more than one node joined.
	recs     []meta.Record // the committed log, index i+1 at i
	q        []*quorumNode // per node, in m.nodes' order
	leader   int           // the leading node's place in m.nodes, or -1
	epoch    uint64
	electing bool  // an election is queued
	qr       *Rand // leadership draws
	lagR     *Rand // apply-lag draws
	lossR    *Rand // disk-loss draws
	// lossChance: a crash loses the node's metadata disk (metaquorum.go).
	lossChance float64
	// Planted bugs for the cluster conformance test's own test: a lagging follower
	// skips a record; a deposed leader's NotLeader answers may still commit.
	plantSkip, plantNotLeaderCommits bool
}

// metaNode is a node as the metadata log sees it.
type metaNode interface {
	metaID() int32
	metaGen() uint64 // the running incarnation
	metaUp() bool
	metaInput(in broker.Input) // to the running incarnation
	metaErrSpell() bool        // in a MetaErrors spell: proposals may be rejected
}

func (n *node) metaID() int32             { return n.id }
func (n *node) metaGen() uint64           { return n.gen }
func (n *node) metaUp() bool              { return n.up }
func (n *node) metaInput(in broker.Input) { n.input(in) }
func (n *node) metaErrSpell() bool        { return n.w.now < n.metaErrUntil }

// committedTopic is what the log ever committed for one topic name.
type committedTopic struct {
	ids      map[[16]byte]bool
	maxParts int32
	live     bool
	// deletes says, for each TopicDeleted record of the name in commit order, whether
	// it deleted a live topic (a record for a name already gone changes nothing).
	deletes []bool
}

// errProposalFailed is the injected metadata failure: the record was not committed.
var errProposalFailed = errors.New("sim: metadata proposal failed (injected)")

// errOutcomeUnknown is the injected unknown outcome (leadership lost in a quorum).
var errOutcomeUnknown = errors.New("sim: metadata proposal outcome unknown (injected)")

type proposal struct {
	n       metaNode
	gen     uint64
	rec     meta.Record
	token   uint64
	settled bool
}

func newMetaLog(w *World) *metaLog {
	// The records go through the real on-disk encoding (disk.MetaLog over a MemState).
	lg, err := disk.NewMetaLog(disk.NewMemState())
	if err != nil {
		panic("sim: empty metadata log cannot fail to open: " + err.Error())
	}
	return &metaLog{w: w, log: lg, r: newStream(w.cfg.Seed, "meta"),
		errR: newStream(w.cfg.Seed, "metaerr"), unkR: newStream(w.cfg.Seed, "metaunk"),
		failedIDs: map[[16]byte]bool{}, topics: map[string]*committedTopic{},
		shift: map[int32]uint64{}, epoch: 1, qr: newStream(w.cfg.Seed, "metaquorum"),
		lagR: newStream(w.cfg.Seed, "metalag"), lossR: newStream(w.cfg.Seed, "metaloss")}
}

// join adds a node that follows the log. The first one leads at epoch 1.
func (m *metaLog) join(n metaNode) {
	m.nodes = append(m.nodes, n)
	m.q = append(m.q, &quorumNode{local: newLocalLog(), toldLeader: -1})
}

// start returns what a booting node's incarnation starts from (M1).
func (m *metaLog) start(n metaNode) (broker.Start, error) {
	if m.multi() {
		return m.startQuorum(n)
	}
	delete(m.shift, n.metaID())
	st, err := m.log.Load()
	return broker.Start{Snapshot: st.Snapshot, SnapshotIndex: st.SnapshotIndex,
		Records: st.Records}, err
}

func (m *metaLog) propose(n metaNode, rec meta.Record, token uint64) {
	p := &proposal{n: n, gen: n.metaGen(), rec: rec, token: token}
	if m.multi() && m.proposeQuorum(p) {
		return
	}
	m.pending = append(m.pending, p)
	tm := m.w.cfg.Timing
	t := max(m.w.now+m.r.Exp(tm.MetaFloorUs*us, tm.MetaMeanUs*us), m.tail)
	m.tail = t
	m.w.at(t, KindMetaCommit, n.metaID(), token, 0, func() { m.commit(p) })
}

// live says whether p's proposer still runs the incarnation that proposed it.
func (p *proposal) live() bool { return p.n.metaUp() && p.n.metaGen() == p.gen }

// answer tells p's proposer how its proposal ended, if it is still the same incarnation.
func (m *metaLog) answer(p *proposal, a broker.MetaAnswer) {
	if p.live() {
		a.Token = p.token
		p.n.metaInput(a)
	}
}

// commit makes p durable, applies it on every live node and answers the proposer
// (M2, M4), unless a failure or an unknown outcome is injected.
func (m *metaLog) commit(p *proposal) {
	if p.settled {
		return
	}
	if m.multi() && !m.quorum() {
		m.depose() // the leader cannot reach a majority: it steps down
		return
	}
	m.settle(p)
	m.commitLate() // proposed before p: they commit first, if at all
	if m.injectFailure(p) || m.injectUnknown(p) {
		return
	}
	if idx, ok := m.commitRecord(p.rec); ok {
		idx += m.shift[p.n.metaID()]
		m.answer(p, broker.MetaAnswer{Outcome: broker.MetaCommitted, Index: idx})
	}
}

// commitRecord appends rec and delivers it to every live node; false if the log failed.
func (m *metaLog) commitRecord(rec meta.Record) (uint64, bool) {
	idx, err := m.append(rec)
	if err != nil {
		m.w.fail("world", "metadata log append: %v", err)
		return 0, false
	}
	m.recs = append(m.recs, rec)
	if m.multi() {
		if rec.Kind == meta.KindPartitionChange {
			// acks=1 promises nothing across a leader change (the new leader may lack
			// what the old one acknowledged alone), as across a power loss.
			m.w.hist.Crashes = append(m.w.hist.Crashes, linearizabilityCrash(-1, m.w.now))
		}
		m.spread()
		return idx, true
	}
	for _, n := range m.nodes {
		if n.metaUp() {
			n.metaInput(broker.MetaApplied{Index: idx + m.shift[n.metaID()], Record: rec})
		}
	}
	return idx, true
}

// injectFailure fails p during a MetaErrors spell on its node: nothing is appended and
// the proposer hears a definite failure (Rejected). Commit order of the others is
// unchanged (M5).
func (m *metaLog) injectFailure(p *proposal) bool {
	n := p.n
	if !n.metaErrSpell() || !m.errR.Chance(m.w.cfg.Faults.MetaErrorChance) {
		return false
	}
	m.w.stats.Faults["meta-error"]++
	if p.rec.Kind == meta.KindTopicCreated {
		m.failedIDs[p.rec.TopicID] = true
	}
	if m.w.logging() {
		m.w.logf("meta", "node %d: proposal %d (%v) failed", n.metaID(), p.token, p.rec.Kind)
	}
	if m.claimCommitted && p.live() {
		// The mutant: a phantom index the log never filled, then the log's own indexes
		// shifted past it for this incarnation so that the broker sees no gap.
		id := n.metaID()
		idx := m.log.LastIndex() + 1 + m.shift[id]
		m.shift[id]++
		n.metaInput(broker.MetaApplied{Index: idx, Record: p.rec})
		m.answer(p, broker.MetaAnswer{Outcome: broker.MetaCommitted, Index: idx})
		return true
	}
	m.answer(p, broker.MetaAnswer{Outcome: broker.MetaRejected, Err: errProposalFailed})
	return true
}

// injectUnknown answers p Unknown with Faults.MetaUnknownChance; the record then
// commits (its MetaApplied follows the answer) or never does, half and half.
func (m *metaLog) injectUnknown(p *proposal) bool {
	c := m.w.cfg.Faults.MetaUnknownChance
	if c <= 0 || !m.unkR.Chance(c) {
		return false
	}
	commits := m.unkR.Chance(0.5)
	m.w.stats.Faults["meta-unknown"]++
	if m.w.logging() {
		m.w.logf("meta", "node %d: proposal %d (%v) outcome unknown, commits: %v",
			p.n.metaID(), p.token, p.rec.Kind, commits)
	}
	m.answer(p, broker.MetaAnswer{Outcome: broker.MetaUnknown, Err: errOutcomeUnknown})
	if commits {
		m.late = append(m.late, p)
		tm := m.w.cfg.Timing
		d := m.unkR.Exp(tm.MetaFloorUs*us, 10*tm.MetaMeanUs*us)
		m.w.after(d, KindMetaCommit, p.n.metaID(), p.token, 1, m.commitLateDue)
	}
	return true
}

// commitLateDue commits the late records when their time comes, if a leader can.
func (m *metaLog) commitLateDue() {
	if !m.multi() || m.leader >= 0 && m.quorum() {
		m.commitLate()
	}
}

// commitLate commits the unknown-outcome records still waiting, in order.
func (m *metaLog) commitLate() {
	late := m.late
	m.late = nil
	for _, p := range late {
		m.w.stats.Faults["meta-unknown-committed"]++
		m.commitRecord(p.rec)
	}
}

// append commits rec, checking that it is not a record whose proposal failed.
func (m *metaLog) append(rec meta.Record) (uint64, error) {
	if rec.Kind == meta.KindTopicCreated && m.failedIDs[rec.TopicID] {
		m.w.fail("anomaly", "topic %s (id %x) committed after its proposal failed",
			rec.Topic, rec.TopicID)
	}
	idx, err := m.log.Append(rec)
	if err != nil {
		return 0, err
	}
	m.index(rec)
	return idx, nil
}

func (m *metaLog) index(rec meta.Record) {
	switch rec.Kind {
	case meta.KindTopicCreated, meta.KindPartitionsAdded, meta.KindTopicDeleted:
	default:
		return
	}
	t := m.topics[rec.Topic]
	if t == nil {
		t = &committedTopic{ids: map[[16]byte]bool{}}
		m.topics[rec.Topic] = t
	}
	switch rec.Kind {
	case meta.KindTopicDeleted:
		t.deletes = append(t.deletes, t.live)
		t.live = false
		return
	case meta.KindTopicCreated:
		t.ids[rec.TopicID] = true
		t.live = true
	}
	t.maxParts = max(t.maxParts, rec.Partitions)
}

// realDeletes counts the deletions of a live topic among the first k TopicDeleted
// records of the name.
func (m *metaLog) realDeletes(topic string, k int) int {
	t := m.topics[topic]
	if t == nil {
		return 0
	}
	n := 0
	for _, real := range t.deletes[:min(k, len(t.deletes))] {
		if real {
			n++
		}
	}
	return n
}

// checkReported checks a topic a broker reported as existing against the committed
// log: a broker's image holds only committed records, so a topic (or partition count,
// or topic id) that never committed, such as one whose proposal failed, is an anomaly.
func (m *metaLog) checkReported(who, topic string, id [16]byte, parts int32) {
	t := m.topics[topic]
	switch {
	case t == nil:
		m.w.fail("anomaly", "%s: metadata reports topic %s, which never committed", who,
			topic)
	case id != [16]byte{} && !t.ids[id]:
		m.w.fail("anomaly", "%s: metadata reports topic %s with id %x, never committed",
			who, topic, id)
	case parts > t.maxParts:
		m.w.fail("anomaly", "%s: metadata reports %d partitions of %s, %d committed", who,
			parts, topic, t.maxParts)
	}
}

func (m *metaLog) settle(p *proposal) {
	p.settled = true
	for i, q := range m.pending {
		if q == p {
			m.pending = append(m.pending[:i], m.pending[i+1:]...)
			return
		}
	}
}

// nodeStopped resolves the stopped node's pending proposals: a random prefix commits
// (the other live nodes apply it), the rest is lost (M6).
func (m *metaLog) nodeStopped(n metaNode) {
	if m.multi() {
		m.stoppedQuorum(n)
		return
	}
	var mine []*proposal
	for _, p := range m.pending {
		if p.n == n {
			mine = append(mine, p)
		}
	}
	keep := m.r.Intn(len(mine) + 1)
	if keep > 0 {
		m.commitLate() // proposed before the prefix that commits
	}
	for i, p := range mine {
		m.settle(p)
		if i < keep {
			m.commitRecord(p.rec)
		}
	}
}

func linearizabilityCrash(node int32, at int64) linearizability.Crash {
	return linearizability.Crash{Node: node, At: at}
}
