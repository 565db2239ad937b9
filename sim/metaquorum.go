package sim

import (
	"errors"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/disk"
)

// The quorum half of the metadata model: with more than one node, metaLog models a
// raft-like quorum over the one committed log (m.log, m.recs). One node leads at a
// time in the model's view (m.leader, m.epoch); only it takes proposals. Every node
// keeps its own durable log (quorumNode.local, the real disk.MetaLog encoding) holding
// the committed records it has applied, so a restart begins from its own snapshot plus
// records and replays the rest. The awkward cases, all drawn from streams of their own
// ("metaquorum" for leadership, "metalag" for apply lag, "metaloss" for disk loss) so
// a single-node run draws nothing new:
//   - leadership moves (a drawn move, the leader's crash, or a leader that lost its
//     quorum steps down): the old leader's uncommitted proposals are answered Unknown
//     and a drawn prefix of them commits when the next leader is elected (it holds
//     them), before anything proposed later, so each proposer's order holds (M5);
//   - the old leader hears of its deposition late (its MetaLeaderChanged waits a drawn
//     delay): meanwhile it believes it leads and its proposals are answered NotLeader
//     or Unknown, and an Unknown one may commit, but only through the log's one order
//     (it joins the records the next commit or election commits first);
//   - followers apply committed records after a drawn lag, each on its own;
//   - a crash may lose the node's metadata disk (lossChance): it restarts from the committed log
//     installed as a snapshot (or as records), as a raft follower gets it from the
//     leader before it serves.
//
// Elections need a majority of nodes up; without one no record commits and the
// leader's proposals end Unknown. The node ids in MetaLeaderChanged and hints are the
// brokers' (metaID()+1).

// quorumNode is the model's state for one node (multi-node mode).
type quorumNode struct {
	local      *disk.MetaLog // the node's durable metadata log
	gen        uint64        // the incarnation the fields below describe
	applied    uint64        // committed records delivered to that incarnation
	toldLeader int32         // the leader it was told last (a broker id, or -1)
	toldEpoch  uint64
	catchup    bool // a catch-up (apply-lag) event is queued
	deaf       bool // deposed, told later: leadership news waits
	lost       bool // its metadata disk was lost at the last crash
}

// errDeposed answers the proposals of a leader that lost its leadership.
var errDeposed = errors.New("sim: metadata leader deposed (outcome unknown)")

// errNotLeader answers a proposal on a node that does not lead.
var errNotLeader = errors.New("sim: not the metadata leader")

// Quorum knobs: how often a follower applies late, and how often leadership moves in
// a World run (mean, virtual µs). metaLossChance is the cluster conformance test's
// chance that a crash loses the metadata disk (metaLog.lossChance; 0 in a World until
// it has a disk-loss fault that also wipes the node's partitions).
const (
	metaLagChance  = 0.3
	metaLossChance = 0.15
	metaMoveMeanUs = 1_500_000
)

func (m *metaLog) multi() bool { return len(m.nodes) > 1 }

func newLocalLog() *disk.MetaLog {
	lg, err := disk.NewMetaLog(disk.NewMemState())
	if err != nil {
		panic("sim: empty metadata log cannot fail to open: " + err.Error())
	}
	return lg
}

// at returns the index of n among the nodes.
func (m *metaLog) at(n metaNode) int {
	for i, o := range m.nodes {
		if o == n {
			return i
		}
	}
	panic("sim: metadata log: unknown node")
}

// leaderID is the leader's broker id, or -1.
func (m *metaLog) leaderID() int32 {
	if m.leader < 0 {
		return -1
	}
	return m.nodes[m.leader].metaID() + 1
}

// quorum says whether a majority of the nodes is up (and, while nodes are cut from
// each other, whether the leader, or with none some node, reaches a majority).
func (m *metaLog) quorum() bool {
	if m.w.cutsActive() {
		if m.leader >= 0 {
			return m.reaches(m.leader)
		}
		for i := range m.nodes {
			if m.reaches(i) {
				return true
			}
		}
		return false
	}
	up := 0
	for _, n := range m.nodes {
		if n.metaUp() {
			up++
		}
	}
	return 2*up > len(m.nodes)
}

// reaches says whether node i is up and talks both ways with a majority of the nodes
// (itself included) that are up.
func (m *metaLog) reaches(i int) bool {
	if !m.nodes[i].metaUp() {
		return false
	}
	k := 0
	for j, n := range m.nodes {
		if n.metaUp() && (j == i || !m.w.peerCut(m.nodes[i].metaID(), n.metaID())) {
			k++
		}
	}
	return 2*k > len(m.nodes)
}

// cutFromLeader says whether node i cannot hear from the leader now.
func (m *metaLog) cutFromLeader(i int) bool {
	return m.leader >= 0 && i != m.leader &&
		m.w.peerCut(m.nodes[i].metaID(), m.nodes[m.leader].metaID())
}

// netChanged follows a change of the cuts between nodes (faults_cluster.go): a leader
// that no longer reaches a majority steps down, an election is queued when none leads,
// and the nodes that hear the leader again learn who leads and catch up.
func (m *metaLog) netChanged() {
	if !m.multi() {
		return
	}
	if m.leader >= 0 && !m.reaches(m.leader) {
		m.w.stats.Faults["meta-leader-cut-off"]++
		m.depose()
	}
	if m.leader < 0 {
		m.electSoon()
	}
	for i := range m.nodes {
		m.tell(i)
		m.lagOrApply(i)
	}
}

// loseDisk marks n's metadata log lost: its next start installs the committed log.
func (m *metaLog) loseDisk(n metaNode) {
	if m.multi() {
		m.q[m.at(n)].lost = true
	}
}

// startQuorum is start for a node of a quorum: its own durable log, after installing
// the committed log on a node whose disk was lost.
func (m *metaLog) startQuorum(n metaNode) (broker.Start, error) {
	q := m.q[m.at(n)]
	if q.lost {
		q.lost = false
		if err := m.install(q); err != nil {
			return broker.Start{}, err
		}
	}
	st, err := q.local.Load()
	s := broker.Start{Snapshot: st.Snapshot, SnapshotIndex: st.SnapshotIndex,
		Records: st.Records}
	*q = quorumNode{local: q.local, gen: n.metaGen(), applied: s.LastIndex(),
		toldLeader: -1}
	return s, err
}

// install rebuilds a lost node's log from the committed log: every record, then (half
// the time) a snapshot of their image that compacts them.
func (m *metaLog) install(q *quorumNode) error {
	q.local = newLocalLog()
	m.w.stats.Faults["meta-installed"]++
	for _, r := range m.recs {
		if _, err := q.local.Append(r); err != nil {
			return err
		}
	}
	if len(m.recs) == 0 || !m.lossR.Chance(0.5) {
		return nil
	}
	return snapshotLocal(q.local)
}

// snapshotLocal snapshots a node's log at its last index and compacts it.
func snapshotLocal(lg *disk.MetaLog) error {
	st, err := lg.Load()
	if err != nil {
		return err
	}
	im := meta.NewImage()
	for _, r := range append(st.Snapshot, st.Records...) {
		_ = im.Apply(r) // a record that does not apply changes nothing, as in the broker
	}
	return lg.Snapshot(lg.LastIndex(), im.Snapshot())
}

// booted tells a node that has just taken its Start who leads (M7), then lets it
// catch up with the log.
func (m *metaLog) booted(n metaNode) {
	if !m.multi() {
		// A single node leads its log from its start.
		n.metaInput(broker.MetaLeaderChanged{Leader: n.metaID() + 1, Epoch: 1})
		return
	}
	i := m.at(n)
	m.tell(i)
	m.lagOrApply(i)
	if m.leader < 0 {
		m.electSoon()
	}
}

// tell delivers the current leadership to node i unless it knows it or hears late.
func (m *metaLog) tell(i int) {
	q, n := m.q[i], m.nodes[i]
	if !n.metaUp() || q.gen != n.metaGen() || q.deaf || q.toldEpoch >= m.epoch ||
		m.cutFromLeader(i) {
		return
	}
	q.toldLeader, q.toldEpoch = m.leaderID(), m.epoch
	n.metaInput(broker.MetaLeaderChanged{Leader: q.toldLeader, Epoch: m.epoch})
}

// proposeQuorum takes p on the leader; elsewhere it answers NotLeader, or, on a
// deposed leader that does not know it yet, NotLeader or Unknown (and an Unknown one
// may still commit, in the log's order).
func (m *metaLog) proposeQuorum(p *proposal) bool {
	i := m.at(p.n)
	if i == m.leader {
		return false
	}
	q := m.q[i]
	a := broker.MetaAnswer{Outcome: broker.MetaNotLeader, Leader: q.toldLeader,
		Err: errNotLeader}
	if q.toldLeader == p.n.metaID()+1 {
		m.w.stats.Faults["meta-deposed-proposal"]++
		a.Leader = m.leaderID()
		if m.qr.Chance(0.5) {
			a = broker.MetaAnswer{Outcome: broker.MetaUnknown, Err: errDeposed}
		}
		if (a.Outcome == broker.MetaUnknown || m.plantNotLeaderCommits) && m.qr.Chance(0.5) {
			m.late = append(m.late, p)
		}
	}
	tm := m.w.cfg.Timing
	d := m.qr.Exp(tm.MetaFloorUs*us, tm.MetaMeanUs*us)
	m.w.after(d, KindMetaCommit, p.n.metaID(), p.token, 4, func() { m.answer(p, a) })
	return true
}

// depose ends the leader's term: its pending proposals are answered Unknown and a
// drawn prefix of them is held to commit first under the next leader; the old
// leader, if up, hears of it after a drawn delay.
func (m *metaLog) depose() {
	old := m.leader
	if old < 0 {
		return
	}
	m.leader = -1
	m.epoch++
	m.w.stats.Faults["meta-deposed"]++
	mine := m.pending
	m.pending = nil
	keep := m.qr.Intn(len(mine) + 1)
	for k, p := range mine {
		p.settled = true
		if k < keep {
			m.late = append(m.late, p)
		}
		m.answer(p, broker.MetaAnswer{Outcome: broker.MetaUnknown, Err: errDeposed})
	}
	if q, n := m.q[old], m.nodes[old]; n.metaUp() && q.gen == n.metaGen() {
		q.deaf = true
		gen := q.gen
		tm := m.w.cfg.Timing
		d := m.qr.Exp(tm.MetaFloorUs*us, 5*tm.MetaMeanUs*us)
		m.w.after(d, KindMetaCommit, n.metaID(), gen, 5, func() {
			if q.gen == gen {
				q.deaf = false
				m.tell(old)
			}
		})
	}
}

// electSoon schedules an election after a drawn delay, unless one is queued.
func (m *metaLog) electSoon() {
	if m.electing {
		return
	}
	m.electing = true
	tm := m.w.cfg.Timing
	d := m.qr.Exp(tm.MetaFloorUs*us, 5*tm.MetaMeanUs*us)
	m.w.after(d, KindMetaCommit, -1, m.epoch, 2, func() {
		m.electing = false
		m.elect(-1)
	})
}

// elect makes a drawn up node other than not the leader, if a majority is up: it
// holds every committed record, and commits the held records of old leaders first.
func (m *metaLog) elect(not int) {
	if m.leader >= 0 || !m.quorum() {
		return
	}
	var ups []int
	for i, n := range m.nodes {
		if n.metaUp() && i != not && (!m.w.cutsActive() || m.reaches(i)) {
			ups = append(ups, i)
		}
	}
	if len(ups) == 0 {
		return
	}
	m.leader = ups[m.qr.Intn(len(ups))]
	m.epoch++
	m.w.stats.Faults["meta-elected"]++
	if m.w.logging() {
		m.w.logf("meta", "node %d leads the metadata quorum, epoch %d",
			m.nodes[m.leader].metaID(), m.epoch)
	}
	for i := range m.nodes {
		m.tell(i)
	}
	if m.leader < 0 {
		return // a step the news caused crashed the new leader
	}
	m.catchUp(m.leader)
	m.commitLate()
}

// moveLeader moves leadership to another node now, if a majority is up.
func (m *metaLog) moveLeader() {
	if old := m.leader; old >= 0 && m.quorum() {
		m.depose()
		m.elect(old)
		if m.leader < 0 {
			m.electSoon()
		}
	}
}

// scheduleMoves moves leadership at drawn times through the safety phase. The moves
// are a fault and stop with the others at the heal: each new controller gives every
// registered broker a full session (as KRaft's does), so moves a mean 1.5 s apart kept
// a cluster restarted as a whole from registering again past the heal until two moves
// fell more than broker.session.timeout.ms apart (seed 254 with three nodes: 18 s).
func (m *metaLog) scheduleMoves() {
	m.w.after(m.qr.Exp(0, metaMoveMeanUs*us), KindMetaCommit, -1, 0, 6, func() {
		if m.w.phase == phaseHeal {
			return
		}
		m.moveLeader()
		m.scheduleMoves()
	})
}

// spread applies the newly committed records: at once on the leader, after a drawn
// lag on the others.
func (m *metaLog) spread() {
	if m.leader >= 0 {
		m.catchUp(m.leader)
	}
	for i := range m.nodes {
		if i != m.leader {
			m.lagOrApply(i)
		}
	}
}

// lagOrApply catches node i up now, or after a drawn lag.
func (m *metaLog) lagOrApply(i int) {
	q, n := m.q[i], m.nodes[i]
	if q.catchup || !n.metaUp() || q.gen != n.metaGen() || m.cutFromLeader(i) {
		return
	}
	if !m.lagR.Chance(metaLagChance) {
		m.catchUp(i)
		return
	}
	q.catchup = true
	gen := q.gen
	tm := m.w.cfg.Timing
	d := m.lagR.Exp(tm.MetaFloorUs*us, 3*tm.MetaMeanUs*us)
	m.w.after(d, KindMetaCommit, n.metaID(), gen, 3, func() {
		if q.gen == gen {
			q.catchup = false
			m.catchUp(i)
		}
	})
}

// catchUp delivers to node i, in order, every committed record it has not applied,
// storing each in its log first.
func (m *metaLog) catchUp(i int) {
	q, n := m.q[i], m.nodes[i]
	for q.applied < uint64(len(m.recs)) && n.metaUp() && q.gen == n.metaGen() &&
		!m.cutFromLeader(i) {
		rec := m.recs[q.applied]
		q.applied++
		if m.plantSkip && i != m.leader && q.applied > 1 && q.applied%5 == 0 {
			continue // the planted bug: a lagging follower skips a record
		}
		if _, err := q.local.Append(rec); err != nil {
			m.w.fail("world", "node %d: metadata log append: %v", n.metaID(), err)
			return
		}
		n.metaInput(broker.MetaApplied{Index: q.applied, Record: rec})
	}
}

// stoppedQuorum handles a node's crash: a leader is deposed (another is elected
// later), and the node's metadata disk may be lost.
func (m *metaLog) stoppedQuorum(n metaNode) {
	i := m.at(n)
	if i == m.leader {
		m.depose()
		m.electSoon()
	}
	m.q[i].gen = 0 // no incarnation runs: queued catch-ups and notices are stale
	if m.lossR.Chance(m.lossChance) {
		m.q[i].lost = true
		m.w.stats.Faults["meta-disk-lost"]++
	}
}
