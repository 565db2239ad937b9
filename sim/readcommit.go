package sim

import (
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/linearizability"
)

// The read-uncommitted check of a clustered world (issue 8): a high-water mark a client
// is shown — a Fetch answer's, with the records below it, or ListOffsets' latest offset —
// promises that everything below it is committed: every member of the partition's ISR
// holds it, so no clean election can lose it (Kafka's "only committed messages are ever
// given out to the consumer"). When an answer arrives, the simulator looks at every
// other ISR member in the newest committed metadata any node applied (latestImage)
// that is up and holds the partition, and
// fails the seed if one's log ends below the mark the client saw. A record below a
// mark was on every ISR member when the mark reached it, and a member added later
// caught up first; a member's log end goes back only by a truncation above the mark or
// a crash losing bytes it never reported holding (followers report their durable end),
// so checking at arrival, after the answer was made, is sound and only looser.
//
// This sees an exposed tail at once, where lost-read (linearizability/lostread.go) needs
// it to vanish too, which takes a further crash and election before any follower
// fetches it: `replica/keeps-recovered-hwm` (a restarted replica taking its recovered
// log end as its high-water mark) exposed tails on many seeds that were replicated
// before anything could remove them.
//
// Not checked, where the promise is weaker or another check owns the loss: unclean
// leader election allowed (a new leader's log is the truth whatever the old ISR held),
// log.flush.policy=never on some topic (a crash loses what a follower reported), a
// member whose disk was lost and has not caught up since (diskloss: lost-write and
// replica-diverged judge it), a member that is down or whose log is offline, and an
// answering replica a rot hit (rot.go): recovery starts its log after the rotten batch,
// and its high-water mark, never below its log start, may then pass what the ISR holds
// (seed 2626: a rot moved broker 3's start to 93 while ISR member broker 1, paused,
// held 78; elected, broker 3 showed 93 with nothing below it to read).
const ReadUncommitted = "read-uncommitted"

// checkReadCommitted fails the run when a read's high-water mark passes the log end of
// an ISR member (see above); called as the read is recorded, while the answering node is
// known.
func (w *World) checkReadCommitted(op *linearizability.Op) {
	if !w.readCommitChecked() {
		return
	}
	im := w.latestImage()
	if im == nil {
		return
	}
	st, assigned, _ := im.Partition(op.TP.Topic, op.TP.Partition)
	if !assigned {
		return
	}
	if w.uncommittedSeen[op.TP] {
		return // one failure per partition
	}
	if w.rottedOn(w.answering, op.TP) {
		return
	}
	for _, id := range st.ISR {
		if id == w.answering {
			continue
		}
		held, ok := w.memberHolds(id, op.TP)
		if !ok || held >= op.HWM {
			continue
		}
		what := "a fetch"
		if op.FetchOffset < 0 {
			what = "ListOffsets(latest)"
		}
		if w.uncommittedSeen == nil {
			w.uncommittedSeen = map[core.TopicPartition]bool{}
		}
		w.uncommittedSeen[op.TP] = true
		w.fail(ReadUncommitted, "%s: %s answered by broker %d (its replica's epoch %d) "+
			"showed high-water mark %d; ISR member broker %d holds the log only to %d "+
			"(committed metadata: ISR %v, leader %d, epoch %d)", op.TP, what, w.answering,
			op.ServedEpoch, op.HWM, id, held, st.ISR, st.Leader, st.LeaderEpoch)
		return
	}
}

// latestImage is the metadata image of the up node that applied the most records: the
// newest committed state any node acts on. The active controller's own image may lag a
// node that applied a record (an ISR shrink) before it, and that node, leading, may
// already count the smaller ISR (sim seed 152 with --set nodes=5).
func (w *World) latestImage() *meta.Image {
	var best *meta.Image
	var applied uint64
	for _, n := range w.nodes {
		if !n.up || n.host == nil {
			continue
		}
		if c := n.host.Controller(); best == nil || c.Applied() > applied {
			best, applied = c.Image(), c.Applied()
		}
	}
	return best
}

// readCommitChecked says whether this world's settings promise that a shown high-water
// mark is held by every ISR member (above).
func (w *World) readCommitChecked() bool {
	if !w.clustered() || w.hist.FlushNever {
		return false
	}
	if v, _ := clusterDefault(w.cfg, "unclean.leader.election.enable"); v == "true" {
		return false
	}
	for _, t := range w.cfg.Topics {
		if t.Configs["unclean.leader.election.enable"] == "true" {
			return false
		}
	}
	return true
}

// memberHolds is the log end of broker id's replica of tp, false when it cannot be
// judged: the node is down, hosts no replica, its log is offline, or its disk was lost
// and its log has not reached what the partition had committed then.
func (w *World) memberHolds(id int32, tp core.TopicPartition) (int64, bool) {
	r := w.hosted(id, tp)
	if r == nil || r.Offline() {
		return 0, false
	}
	n := w.nodes[w.nodeIndex(id)]
	if need, wiped := n.wipedNeed[tp]; wiped && r.EndOffset() < need {
		return 0, false
	}
	return r.EndOffset(), true
}
