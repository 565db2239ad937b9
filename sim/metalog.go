package sim

import (
	"errors"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/disk"
	"github.com/sluicemq/sluice/linearizability"
)

// metaLog is the simulator's model of the metadata log contract: a proposal commits
// after a small latency, in proposal order, and is durable once committed. When the
// proposing node crashes, a prefix of its pending proposals may still commit (the
// quorum got them) and the rest are lost: the awkward "unknown outcome" case.
type metaLog struct {
	w       *World
	log     *disk.MetaLog
	tail    int64
	pending []*proposal
	r       *Rand
	errR    *Rand // MetaErrors draws, a stream of its own so other draws do not shift
	// failedIDs holds the topic ids of topic records whose proposal failed: a failed
	// proposal must leave no trace, so none of them may ever be committed.
	failedIDs map[[16]byte]bool
	// topics indexes the committed topic records, to check what brokers report.
	topics map[string]*committedTopic
	// claimCommitted is a mutant for the checker's own test: a failed proposal is
	// reported to the broker as committed (Err nil) though the log did not append it.
	claimCommitted bool
}

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

type proposal struct {
	n       *node
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
		errR: newStream(w.cfg.Seed, "metaerr"), failedIDs: map[[16]byte]bool{},
		topics: map[string]*committedTopic{}}
}

func (m *metaLog) committed() ([]meta.Record, error) { return m.log.Load() }

func (m *metaLog) propose(n *node, rec meta.Record, token uint64) {
	p := &proposal{n: n, gen: n.gen, rec: rec, token: token}
	m.pending = append(m.pending, p)
	tm := m.w.cfg.Timing
	t := max(m.w.now+m.r.Exp(tm.MetaFloorUs*us, tm.MetaMeanUs*us), m.tail)
	m.tail = t
	m.w.at(t, KindMetaCommit, n.id, token, 0, func() { m.commit(p) })
}

// commit makes p durable and tells the proposer, if it is still the same incarnation.
func (m *metaLog) commit(p *proposal) {
	if p.settled {
		return
	}
	m.settle(p)
	if m.injectFailure(p) {
		return
	}
	err := m.append(p.rec)
	if p.n.up && p.n.gen == p.gen {
		p.n.input(broker.MetaCommitted{Token: p.token, Record: p.rec, Err: err})
	}
}

// injectFailure fails p during a MetaErrors spell on its node: nothing is appended and
// the proposer hears a definite failure. Commit order of the others is unchanged (E3).
func (m *metaLog) injectFailure(p *proposal) bool {
	n := p.n
	if m.w.now >= n.metaErrUntil || !m.errR.Chance(m.w.cfg.Faults.MetaErrorChance) {
		return false
	}
	m.w.stats.Faults["meta-error"]++
	if p.rec.Kind == meta.KindTopicCreated {
		m.failedIDs[p.rec.TopicID] = true
	}
	if m.w.logging() {
		m.w.logf("meta", "node %d: proposal %d (%v) failed", n.id, p.token, p.rec.Kind)
	}
	if n.up && n.gen == p.gen {
		err := errProposalFailed
		if m.claimCommitted {
			err = nil
		}
		n.input(broker.MetaCommitted{Token: p.token, Record: p.rec, Err: err})
	}
	return true
}

// append commits rec, checking that it is not a record whose proposal failed.
func (m *metaLog) append(rec meta.Record) error {
	if rec.Kind == meta.KindTopicCreated && m.failedIDs[rec.TopicID] {
		m.w.fail("anomaly", "topic %s (id %x) committed after its proposal failed",
			rec.Topic, rec.TopicID)
	}
	if err := m.log.Append(rec); err != nil {
		return err
	}
	m.index(rec)
	return nil
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

// nodeStopped resolves the stopped node's pending proposals: a random prefix commits,
// the rest is lost.
func (m *metaLog) nodeStopped(n *node) {
	var mine []*proposal
	for _, p := range m.pending {
		if p.n == n {
			mine = append(mine, p)
		}
	}
	keep := m.r.Intn(len(mine) + 1)
	for i, p := range mine {
		m.settle(p)
		if i < keep {
			if err := m.append(p.rec); err != nil {
				m.w.fail("world", "metadata log append: %v", err)
			}
		}
	}
}

func linearizabilityCrash(node int32, at int64) linearizability.Crash {
	return linearizability.Crash{Node: node, At: at}
}
