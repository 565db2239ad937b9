package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
)

// The `cascade` cluster fault (docs/simulation.md, "Cluster faults"): two failovers in
// which a replica that just restarted is elected while another ISR member lags behind
// the log it recovered. Random crashes almost never line this up: a restarted broker
// never resumes leadership directly (its old incarnation is fenced first and removed from
// the ISR), and by the time it is elected again its followers have long fetched what it
// holds. It is the sequence that exposes a recovered replica's high-water mark
// (docs/replication.md, "The high-water mark after a restart"; mutant
// `replica/keeps-recovered-hwm`), and a hard case for the election and high-water mark
// code in general. One arrival, for a drawn partition of a user topic with three or more
// replicas, all in the ISR and up, whose leader is not its last replica (L the leader;
// S the last replica; F another follower; the controller elects the first ISR member in
// replica order, so F before S, then L before S):
//
//  1. S's replica fetcher gets stuck: its Fetch and OffsetForLeaderEpoch requests to
//     its peers are held, not sent (a hung ReplicaFetcherThread), while its heartbeats
//     and everything else go on, so it stays registered, unfenced and — for
//     replica.lag.time.max.ms of each leadership — in the ISR. The high-water mark stops
//     at S's log end; L goes on appending what producers send, and F fetches it.
//  2. 100–400 ms later L's process is killed (its page cache survives: it keeps its log
//     beyond the high-water mark) and restarts 50–200 ms after. The controller fences
//     it and elects F, S still in the ISR; L comes back as F's follower.
//  3. Once L is back in the committed ISR (checked every 50 ms), or 2.8 s after step 2
//     at the latest (before F would drop S from the ISR), F's process is killed and
//     stays down 1.5–3 s: the controller elects L, with S in the ISR.
//  4. S's fetcher stays stuck for about faults.cascade.for.ms more, then its held
//     requests go out.
//
// A correct L starts its second leadership with a high-water mark S's log reaches, and
// readers see nothing S lacks; the read-uncommitted check (readcommit.go) fails a run
// where they do. Every draw comes from the faults stream; one cascade runs at a time.

// drawCascadeFault draws the cascade's chance, after every older choice; it acts only
// in worlds of more than one node.
func drawCascadeFault(r *Rand, c *Config) {
	s := drawSpell(r, 0.15, 2000, 6000, 1000, 2500)
	if clusterFaultsByDefault {
		c.Faults.Cascade = s
	}
}

// cascade starts one cascade (above); false if no partition qualifies.
func (w *World) cascade() bool {
	if w.cascading {
		return false
	}
	tp, lead, first, lag, ok := w.drawCascade()
	if !ok {
		return false
	}
	w.cascading = true
	ln, fn, sn := w.nodes[lead], w.nodes[first], w.nodes[lag]
	w.stallFetcher(sn, w.now+60_000*ms) // shortened in step 4
	w.tlMark(-1, "cascade", fmt.Sprintf("cascade on %s: node%d's replica fetcher is stuck; "+
		"the leader node%d is killed next, then node%d, the follower elected after it",
		tp, lag, lead, first))
	killIn := w.faultR.Between(100, 400) * ms
	down := w.faultR.Between(50, 200) * ms
	nextDown := w.faultR.Between(1500, 3000) * ms
	f := w.spell(fCascade).ForMs
	stuck := w.faultR.Between(f/2, f*3/2) * ms
	w.after(killIn, KindFault, lead, uint64(fCascade), 1, func() {
		if w.phase != phaseSafety {
			w.endCascade(sn)
			return
		}
		if ln.up {
			w.killFor(ln, down, "process killed (cascade: the leader)")
		}
		w.awaitCascadeISR(tp, w.now+6000*ms, ln, fn, sn, nextDown, stuck, false)
	})
	return true
}

// awaitCascadeISR kills the cascade's second leader once the first is back in the
// committed ISR (out of it first: its old incarnation fenced), or at deadline — 1.8 s
// after F's election once it is seen — and ends the stall after it.
func (w *World) awaitCascadeISR(tp core.TopicPartition, deadline int64, ln, fn, sn *node,
	down, stuck int64, wasOut bool) {
	w.after(50*ms, KindFault, ln.id, uint64(fCascade), 2, func() {
		if w.phase != phaseSafety {
			w.endCascade(sn)
			return
		}
		wasOut = wasOut || !w.inCommittedISR(tp, ln.id+1)
		if w.committedLeader(tp) == fn.id+1 {
			deadline = min(deadline, w.now+1800*ms)
		}
		if !(wasOut && ln.up && w.inCommittedISR(tp, ln.id+1)) && w.now < deadline {
			w.awaitCascadeISR(tp, deadline, ln, fn, sn, down, stuck, wasOut)
			return
		}
		if w.now < deadline {
			w.stats.Faults["cascade-rejoined"]++ // L is in the ISR again, before S left
		}
		if fn.up {
			w.killFor(fn, down, "process killed (cascade: the second leader)")
		}
		w.after(stuck, KindFault, sn.id, uint64(fCascade), 3, func() { w.endCascade(sn) })
	})
}

// endCascade releases the stuck fetcher and lets the next cascade start.
func (w *World) endCascade(sn *node) {
	w.cascading = false
	w.stallFetcher(sn, w.now)
}

// drawCascade draws a partition of a user topic with three or more replicas, all in
// the committed ISR and up, whose leader is not the last replica; it returns the node
// indexes of the leader, a follower before the last replica and the last replica.
func (w *World) drawCascade() (tp core.TopicPartition, lead, first, lag int32, ok bool) {
	im := w.controllerImage()
	if im == nil {
		return tp, 0, 0, 0, false
	}
	type cand struct {
		tp        core.TopicPartition
		lead      int32
		followers []int32
	}
	var all []cand
	for _, name := range im.TopicNames() {
		if strings.HasPrefix(name, "__") {
			continue
		}
		for p := int32(0); p < im.Topic(name).Partitions; p++ {
			st, assigned, _ := im.Partition(name, p)
			n := len(st.Replicas)
			if !assigned || st.Leader <= 0 || n < 3 || len(st.ISR) != n ||
				st.Replicas[n-1] == st.Leader {
				continue
			}
			c := cand{tp: core.TopicPartition{Topic: name, Partition: p}, lead: st.Leader - 1}
			up := true
			for _, r := range st.Replicas {
				up = up && w.hosted(r, c.tp) != nil
				if r != st.Leader {
					c.followers = append(c.followers, r-1)
				}
			}
			if up {
				all = append(all, c)
			}
		}
	}
	if len(all) == 0 {
		return tp, 0, 0, 0, false
	}
	c := all[w.faultR.Intn(len(all))]
	last := len(c.followers) - 1
	first = c.followers[w.faultR.Intn(last)]
	return c.tp, c.lead, first, c.followers[last], true
}

// inCommittedISR says whether broker id is in tp's ISR in the committed metadata.
func (w *World) inCommittedISR(tp core.TopicPartition, id int32) bool {
	im := w.controllerImage()
	if im == nil {
		return false
	}
	st, assigned, _ := im.Partition(tp.Topic, tp.Partition)
	return assigned && slices.Contains(st.ISR, id)
}

// committedLeader is tp's leader in the committed metadata (-1: none or not known).
func (w *World) committedLeader(tp core.TopicPartition) int32 {
	if im := w.controllerImage(); im != nil {
		if st, assigned, _ := im.Partition(tp.Topic, tp.Partition); assigned {
			return st.Leader
		}
	}
	return -1
}

// killFor kills n's process (kill -9: the page cache survives) and restarts it after d.
func (w *World) killFor(n *node, d int64, why string) {
	n.stop(why)
	gen := n.gen
	w.after(d, KindRestart, n.id, gen, 0, func() {
		if n.gen == gen {
			n.restart()
		}
	})
}

// stallFetcher holds n's replica fetcher requests until `until` (now: releases them).
func (w *World) stallFetcher(n *node, until int64) {
	if w.now < until {
		if n.fetchStallUntil <= w.now {
			n.fetchStallFrom = w.now
		}
		n.fetchStallUntil = until
		return
	}
	if n.fetchStallUntil > w.now && w.tl != nil {
		w.tl.span(n.id, faultNames[fCascade], n.fetchStallFrom, w.now, "cascade: the "+
			"node's replica fetcher is stuck (its Fetch and OffsetForLeaderEpoch requests "+
			"are held)")
	}
	n.fetchStallUntil = until
	held := n.heldFetches
	n.heldFetches = nil
	for _, send := range held {
		send()
	}
}

// holdFetch holds a replica fetcher request of incarnation gen of n while its fetcher
// is stuck (cascade); false when it may go now.
func (w *World) holdFetch(n *node, gen uint64, p broker.PeerRequest) bool {
	if w.now >= n.fetchStallUntil {
		return false
	}
	switch p.Msg.(type) {
	case *kmsg.FetchRequest, *kmsg.OffsetForLeaderEpochRequest:
	default:
		return false
	}
	n.heldFetches = append(n.heldFetches, func() {
		if n.up && n.gen == gen {
			w.sendPeer(n, gen, p)
		}
	})
	return true
}
