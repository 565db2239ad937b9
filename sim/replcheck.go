package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
)

// The replication checks of a clustered world, after the heal (liveness) and at the end
// (safety):
//   - replication-healed: once the final read is done the run waits (within the
//     liveness budget) until every partition has a leader, its ISR holds every replica,
//     and every follower holds the leader's log up to its high-water mark; a run whose
//     budget ends first fails as liveness (replication-not-healed) with what is missing;
//   - replica-diverged: every replica holds the same bytes as its leader below the
//     leader's high-water mark (from the greater of their log starts).
// Acknowledged writes lost or duplicated across failovers are the linearizability
// checks' business: the final read goes to the leaders.

// controllerImage is the metadata image of the node that applied the most (the active
// controller's when it is up).
func (w *World) controllerImage() *meta.Image {
	var best *meta.Image
	var applied uint64
	for _, n := range w.nodes {
		if !n.up || n.host == nil {
			continue
		}
		c := n.host.Controller()
		if best == nil || c.Active() || c.Applied() > applied {
			best, applied = c.Image(), c.Applied()
			if c.Active() {
				return best
			}
		}
	}
	return best
}

// replicationGaps lists what keeps the cluster from being healed ("" entries none).
func (w *World) replicationGaps() []string {
	im := w.controllerImage()
	if im == nil {
		return []string{"no node is up"}
	}
	var gaps []string
	for _, name := range im.TopicNames() {
		t := im.Topic(name)
		for p := int32(0); p < t.Partitions; p++ {
			tp := core.TopicPartition{Topic: name, Partition: p}
			if g := w.partitionGap(im, tp); g != "" {
				gaps = append(gaps, g)
			}
		}
	}
	return gaps
}

func (w *World) partitionGap(im *meta.Image, tp core.TopicPartition) string {
	st, assigned, _ := im.Partition(tp.Topic, tp.Partition)
	if !assigned {
		return ""
	}
	isr, reps := slices.Clone(st.ISR), slices.Clone(st.Replicas)
	slices.Sort(isr)
	slices.Sort(reps)
	switch {
	case st.Leader < 0:
		return fmt.Sprintf("%s has no leader (replicas %v, ISR %v)", tp, reps, isr)
	case !slices.Equal(isr, reps):
		return fmt.Sprintf("%s: ISR %v of replicas %v (leader %d)", tp, isr, reps, st.Leader)
	}
	lead := w.hosted(st.Leader, tp)
	if lead == nil || lead.Follower() {
		return fmt.Sprintf("%s: node %d does not lead it yet", tp, st.Leader)
	}
	for _, id := range reps {
		if id == st.Leader {
			continue
		}
		f := w.hosted(id, tp)
		if f == nil || f.EndOffset() < lead.HighWatermark() {
			return fmt.Sprintf("%s: replica %d behind the high-water mark %d", tp, id,
				lead.HighWatermark())
		}
	}
	return ""
}

// hosted is broker id's replica of tp, nil when it is down or hosts none.
func (w *World) hosted(id int32, tp core.TopicPartition) *replica.Replica {
	i := w.nodeIndex(id)
	if i < 0 || !w.nodes[i].up || w.nodes[i].b == nil {
		return nil
	}
	return w.nodes[i].b.HostedReplica(tp)
}

// awaitReplication finishes the run once the cluster is healed, checking again every
// 100 ms (timeUp ends the wait).
func (w *World) awaitReplication() {
	if w.phase == phaseDone {
		return
	}
	if len(w.replicationGaps()) == 0 {
		w.finish()
		return
	}
	w.after(100*ms, KindPhase, -1, uint64(phaseFinal), 1, w.awaitReplication)
}

// checkReplicas compares every follower's log with its leader's below the leader's
// high-water mark.
func (w *World) checkReplicas() {
	im := w.controllerImage()
	if im == nil {
		return
	}
	for _, name := range im.TopicNames() {
		t := im.Topic(name)
		for p := int32(0); p < t.Partitions; p++ {
			tp := core.TopicPartition{Topic: name, Partition: p}
			st, assigned, _ := im.Partition(name, p)
			if !assigned || st.Leader < 0 {
				continue
			}
			lead := w.hosted(st.Leader, tp)
			if lead == nil || lead.Follower() {
				continue
			}
			for _, id := range st.ISR {
				if f := w.hosted(id, tp); id != st.Leader && f != nil {
					w.compareReplicas(tp, st.Leader, lead, id, f)
				}
			}
		}
	}
}

func (w *World) compareReplicas(tp core.TopicPartition, lid int32, lead *replica.Replica,
	fid int32, f *replica.Replica) {
	if w.rottedOn(lid, tp) || w.rottedOn(fid, tp) {
		return // a rot flipped a bit of one copy at rest (rot.go): they differ by design
	}
	if tp.Topic == compactTopic {
		return // each replica cleans on its own schedule: the bytes differ by design
	}
	hwm := lead.HighWatermark()
	from := max(lead.StartOffset(), f.StartOffset())
	if from >= hwm {
		return
	}
	if compactedByCleaner(tp) {
		w.compareCompacted(tp, lid, lead, fid, f, from, hwm)
		return
	}
	lb, lerr := batchesBelow(lead, from, hwm)
	fb, ferr := batchesBelow(f, from, hwm)
	switch {
	case lerr != nil || ferr != nil:
		w.fail("replica-diverged", "%s: reading [%d, %d): leader %d: %v, replica %d: %v",
			tp, from, hwm, lid, lerr, fid, ferr)
	case !bytes.Equal(lb, fb):
		at := firstDiff(lb, fb)
		base, in := batchAt(lb, at)
		w.fail("replica-diverged", "%s: replica %d differs from leader %d below the "+
			"high-water mark %d (from %d: %d bytes against %d; first difference in the "+
			"leader's batch at offset %d, byte %d of it)", tp, fid, lid, hwm, from, len(fb),
			len(lb), base, in)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// batchesBelow returns the replica's whole batches holding offsets in [from, hwm).
func batchesBelow(r *replica.Replica, from, hwm int64) ([]byte, error) {
	var out []byte
	for off := from; off < hwm; {
		res := r.ReadForFollower(off, 1<<20)
		if res.Err != 0 {
			return out, fmt.Errorf("error code %d at %d", res.Err, off)
		}
		next, raw := off, res.Records
		for len(raw) >= 61 {
			size := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
			if size > len(raw) || size < 61 {
				break
			}
			base := int64(binary.BigEndian.Uint64(raw[0:8]))
			last := base + int64(int32(binary.BigEndian.Uint32(raw[23:27])))
			if base >= hwm {
				break
			}
			if last >= off {
				out = append(out, raw[:size]...)
				next = last + 1
			}
			raw = raw[size:]
		}
		if next == off {
			return out, fmt.Errorf("no batch at %d below %d", off, hwm)
		}
		off = next
	}
	return out, nil
}

// rottedOn reports whether a rot fault hit broker id's copy of tp.
func (w *World) rottedOn(id int32, tp core.TopicPartition) bool {
	i := w.nodeIndex(id)
	return i >= 0 && w.nodes[i].rotted[tp]
}

// batchAt names the batch of raw holding byte at: its base offset and the byte's
// position in it.
func batchAt(raw []byte, at int) (base int64, in int) {
	pos := 0
	for len(raw)-pos >= 61 {
		size := 12 + int(int32(binary.BigEndian.Uint32(raw[pos+8:pos+12])))
		if at < pos+size {
			return int64(binary.BigEndian.Uint64(raw[pos : pos+8])), at - pos
		}
		pos += size
	}
	return -1, at - pos
}
