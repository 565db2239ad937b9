package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/disk"
)

// The cluster fault kinds (docs/simulation.md, "Cluster faults"): network partitions
// between nodes, disk loss on one node and power loss of every node at once. They act
// only in a world of more than one node; every draw comes from the "faults" stream
// (w.faultR), in the order the arrivals happen, so a seed replays identically, and a
// seed whose configuration has none of them draws nothing new.
//
// A cut between nodes blocks the peer links' messages (peers.go): a node's requests
// to a peer travel on its link to that peer (toNode), the peer's answers come back on
// the same link (toClient). A cut path from a to b blocks a's requests on a→b and b's
// answers on b→a; messages wait for the cut to end, as TCP retransmits. Clients are
// never cut by these faults. The metadata quorum model (metaquorum.go) counts a node
// as reachable from another only when neither path between them is cut: a leader that
// no longer reaches a majority is deposed (it hears of it only once the cut ends), a
// majority elects another, and a node cut from the leader applies nothing meanwhile.

// clusterFaultsByDefault turns the drawn cluster faults on for clustered seeds. The
// chances are drawn either way (options.go drawClusterFaults), so the choices after
// them do not depend on the switch.
const clusterFaultsByDefault = true

func isClusterFault(k faultKind) bool { return k >= fSplit }

// drawClusterFaults draws the cluster fault kinds (faults_cluster.go), after every older
// choice; they act only when the world has more than one node, and only when
// clusterFaultsByDefault (the chances are drawn either way).
func drawClusterFaults(r *Rand, c *Config) {
	f := Faults{
		Split:        drawSpell(r, 0.25, 1000, 4000, 100, 2000),
		OneWay:       drawSpell(r, 0.2, 1000, 4000, 100, 2000),
		QuorumLeader: drawSpell(r, 0.25, 1000, 4000, 100, 2000),
		LeaderPeers:  drawSpell(r, 0.25, 1000, 4000, 100, 2000),
		DiskLoss:     drawSpell(r, 0.2, 2000, 6000, 50, 1500),
		PowerLoss:    drawSpell(r, 0.15, 2000, 6000, 50, 1000),
	}
	if !clusterFaultsByDefault {
		return
	}
	c.Faults.Split, c.Faults.OneWay = f.Split, f.OneWay
	c.Faults.QuorumLeader, c.Faults.LeaderPeers = f.QuorumLeader, f.LeaderPeers
	c.Faults.DiskLoss, c.Faults.PowerLoss = f.DiskLoss, f.PowerLoss
}

// setUnsafe handles faults.diskloss.lastisr and acks (options.go setSim).
func (c *Config) setUnsafe(name, value string) error {
	if name == "acks" {
		if err := c.setProducers("producer.acks", value); err != nil {
			return fmt.Errorf("acks: %w", err)
		}
		c.StrictAcks1 = value == "1"
		return nil
	}
	on, err := onOff(value)
	c.Faults.DiskLossLastISR = on
	return err
}

// injectClusterFault applies one arrival of a cluster fault kind; false if it found
// nothing to act on (no leader, no eligible node).
func (w *World) injectClusterFault(k faultKind) bool {
	switch k {
	case fSplit:
		return w.split(w.duration(k))
	case fOneWay:
		a := int32(w.faultR.Intn(len(w.nodes)))
		b := int32(w.faultR.Intn(len(w.nodes) - 1))
		if b >= a {
			b++
		}
		until := w.now + w.duration(k)
		w.cutPath(a, b, until)
		w.tlCut(a, b, true, until, fmt.Sprintf("one-way partition: node%d's messages do "+
			"not reach node%d (node%d's do reach node%d)", a, b, b, a))
		w.cutsChanged(until)
		return true
	case fQuorumLeader:
		l := w.meta.leader
		if l < 0 {
			return false
		}
		id := w.meta.nodes[l].metaID()
		w.isolate(id, w.others(id), w.now+w.duration(k), "the metadata quorum leader "+
			"cut off from every other node (clients still reach it)")
		return true
	case fLeaderPeers:
		leader, followers, tp := w.drawLedPartition()
		if leader < 0 {
			return false
		}
		w.isolate(leader, followers, w.now+w.duration(k), fmt.Sprintf("the leader of %s "+
			"cut off from its followers %v (clients still reach it)", tp, followers))
		return true
	case fDiskLoss:
		return w.loseDisk(w.duration(k))
	case fPowerLoss:
		w.powerLoss()
		return true
	case fCascade:
		return w.cascade() // faults_cascade.go
	}
	return false
}

// cutPath blocks the messages from node a to node b until `until`.
func (w *World) cutPath(a, b int32, until int64) {
	w.block(peerActor(a, b), toNode, until)
	w.block(peerActor(b, a), toClient, until)
}

func (w *World) block(actor int32, dir int, until int64) {
	b := w.blocked[actor]
	if b == nil {
		b = &[2]int64{}
		w.blocked[actor] = b
	}
	b[dir] = max(b[dir], until)
}

// pathCut says whether node a's messages to node b are blocked now.
func (w *World) pathCut(a, b int32) bool {
	if x := w.blocked[peerActor(a, b)]; x != nil && x[toNode] > w.now {
		return true
	}
	x := w.blocked[peerActor(b, a)]
	return x != nil && x[toClient] > w.now
}

// peerCut says whether nodes a and b cannot talk both ways now (what a quorum needs).
func (w *World) peerCut(a, b int32) bool {
	return w.now < w.cutUntil && (w.pathCut(a, b) || w.pathCut(b, a))
}

// cutsActive says whether some cut between nodes may still be in force.
func (w *World) cutsActive() bool { return w.now < w.cutUntil }

// cutsChanged tells the quorum model that the network changed now, and again when
// the cut ends at until.
func (w *World) cutsChanged(until int64) {
	w.cutUntil = max(w.cutUntil, until)
	w.meta.netChanged()
	w.at(until, KindFault, -1, uint64(until), 1, w.meta.netChanged)
}

// others lists every node id but id.
func (w *World) others(id int32) []int32 {
	var out []int32
	for _, n := range w.nodes {
		if n.id != id {
			out = append(out, n.id)
		}
	}
	return out
}

// isolate cuts node id from each of peers, both ways, until `until`.
func (w *World) isolate(id int32, peers []int32, until int64, text string) {
	for _, p := range peers {
		w.cutPath(id, p, until)
		w.cutPath(p, id, until)
		w.tlCut(id, p, false, until, text)
	}
	w.tlIsolated(id, until, text)
	w.cutsChanged(until)
}

// split cuts the nodes into two drawn sides, both ways, for d.
func (w *World) split(d int64) bool {
	side := make([]bool, len(w.nodes))
	for i := range side {
		side[i] = w.faultR.Chance(0.5)
	}
	all := true
	for _, s := range side[1:] {
		all = all && s == side[0]
	}
	if all {
		i := w.faultR.Intn(len(side))
		side[i] = !side[i]
	}
	until := w.now + d
	var a, b []int32
	for i, s := range side {
		if s {
			a = append(a, int32(i))
		} else {
			b = append(b, int32(i))
		}
	}
	text := fmt.Sprintf("network partition between nodes %v and %v", a, b)
	for _, x := range a {
		for _, y := range b {
			w.cutPath(x, y, until)
			w.cutPath(y, x, until)
			w.tlCut(x, y, false, until, text)
		}
	}
	w.tlMark(-1, "split", text)
	w.cutsChanged(until)
	return true
}

// drawLedPartition draws a partition with a leader and followers in the committed
// metadata, and returns its leader's and followers' node indexes (-1: none).
func (w *World) drawLedPartition() (int32, []int32, core.TopicPartition) {
	im := w.controllerImage()
	if im == nil {
		return -1, nil, core.TopicPartition{}
	}
	type led struct {
		tp        core.TopicPartition
		leader    int32
		followers []int32
	}
	var all []led
	for _, name := range im.TopicNames() {
		for p := int32(0); p < im.Topic(name).Partitions; p++ {
			st, assigned, _ := im.Partition(name, p)
			if !assigned || st.Leader <= 0 || len(st.Replicas) < 2 {
				continue
			}
			l := led{tp: core.TopicPartition{Topic: name, Partition: p}, leader: st.Leader - 1}
			for _, r := range st.Replicas {
				if r != st.Leader {
					l.followers = append(l.followers, r-1)
				}
			}
			all = append(all, l)
		}
	}
	if len(all) == 0 {
		return -1, nil, core.TopicPartition{}
	}
	c := all[w.faultR.Intn(len(all))]
	return c.leader, c.followers, c.tp
}

// loseDisk: a drawn node's machine dies and comes back after d with an empty disk —
// data directory, state store and metadata log — as `sluice node` restarted over a
// wiped --data (e2e TestClusterNodeRestartsWithAWipedDataDirectory): it registers as a
// new incarnation and must not rejoin an ISR, or lead, before it has caught up. The
// drawn node is one that is up and, unless faults.diskloss.lastisr is on, not the only
// ISR member of a partition whose ISR is below its min.insync.replicas: there the
// acknowledged records live on replicas outside the ISR only, and no clean election
// can reach them (KIP-966's eligible leader replicas; docs/operations.md "The hazard").
func (w *World) loseDisk(d int64) bool {
	var ok []*node
	if !w.diskLossPending() {
		for _, n := range w.nodes {
			if n.up && (w.cfg.Faults.DiskLossLastISR || w.safeToWipe(n)) {
				ok = append(ok, n)
			}
		}
	}
	if len(ok) == 0 {
		w.stats.Faults["diskloss-skipped"]++
		return false
	}
	n := ok[w.faultR.Intn(len(ok))]
	w.noteWiped(n)
	n.stop("disk lost")
	n.wipe()
	w.meta.loseDisk(n)
	w.hist.Crashes = append(w.hist.Crashes, linearizabilityCrash(n.id, w.now))
	gen := n.gen
	w.after(d, KindRestart, n.id, gen, 0, func() {
		if n.gen == gen {
			n.restart()
		}
	})
	return true
}

// diskLossPending says whether a node whose disk was lost has not caught up yet: some
// partition it replicates has a log on it ending below the log end the partition had
// elsewhere when the disk was lost, or below the longest log of the other replicas now
// when those were truncated since (while no other replica is up it cannot tell), or the
// controller has not unfenced its new registration yet: until then its ISR places are
// gone, and a copy it holds counts for no election. One disk is lost at a time: with
// three replicas and min.insync.replicas=2 a cluster survives one lost disk, and
// losing a second before the first node caught up loses acknowledged records in any
// replicated log. (Whether the node is back in the ISR says nothing: a broker may keep
// a wiped node in an ISR, which is what the checks are for.)
func (w *World) diskLossPending() bool {
	im := w.committedImage()
	if im == nil {
		return true
	}
	pending := false
	for _, n := range w.nodes {
		if b, ok := im.Broker(n.id + 1); len(n.wipedNeed) > 0 && (!ok || b.StorageLost ||
			b.StorageID != n.storageID()) {
			pending = true // the controller has not taken its new disk back yet (unfenced)
			continue
		}
		for tp, need := range n.wipedNeed {
			st, assigned, _ := im.Partition(tp.Topic, tp.Partition)
			r := w.hosted(n.id+1, tp)
			switch {
			case !assigned || !slices.Contains(st.Replicas, n.id+1):
				delete(n.wipedNeed, tp) // moved or deleted since
			case r != nil && r.EndOffset() >= min(need, w.othersEnd(n, tp)):
				delete(n.wipedNeed, tp)
			default:
				pending = true
			}
		}
	}
	return pending
}

// noteWiped records, for each partition n replicates, the longest log end of the other
// nodes' replicas: n has caught up once its own log reaches it. (Not their high-water
// marks: a replica restarted without a leader knows none, and a need of 0 let a second
// disk go before the first node had caught up, losing every copy.)
func (w *World) noteWiped(n *node) {
	n.wipedNeed = map[core.TopicPartition]int64{}
	im := w.committedImage()
	if im == nil {
		return
	}
	for _, name := range im.TopicNames() {
		for p := int32(0); p < im.Topic(name).Partitions; p++ {
			st, assigned, _ := im.Partition(name, p)
			if !assigned || !slices.Contains(st.Replicas, n.id+1) {
				continue
			}
			tp := core.TopicPartition{Topic: name, Partition: p}
			n.wipedNeed[tp] = w.othersEnd(n, tp)
		}
	}
}

// othersEnd is the longest log end of tp's replicas on the up nodes other than n, or
// the greatest offset when none is up (nothing to compare with: still pending).
func (w *World) othersEnd(n *node, tp core.TopicPartition) int64 {
	end, found := int64(0), false
	for _, o := range w.nodes {
		if o == n {
			continue
		}
		if r := w.hosted(o.id+1, tp); r != nil {
			end, found = max(end, r.EndOffset()), true
		}
	}
	if !found {
		return math.MaxInt64
	}
	return end
}

// committedImage is the image of every metadata record the quorum committed: the
// simulator's own view, which the disk-loss fault decides from. A node's image can lag
// far behind it or be empty (a node that just restarted replays its log; one whose
// disk was lost has none), and when such a node was the only one up the fault saw no
// partitions at all: no ISR to spare and nothing to wait for, so every disk was lost
// within a second (seed 20 of the harsh disk-loss world, docs/simulation.md).
func (w *World) committedImage() *meta.Image {
	if w.committed == nil {
		w.committed = meta.NewImage()
	}
	for ; w.committedApplied < len(w.meta.recs); w.committedApplied++ {
		_ = w.committed.Apply(w.meta.recs[w.committedApplied]) // refused: as on every node
	}
	return w.committed
}

// safeToWipe says whether n is not the only ISR member of a partition whose ISR is
// below min.insync.replicas, in the committed metadata or in a partition change or
// topic creation proposed and not committed yet: a controller may have decided from a
// view in which n was still alive (seed 1089: the ISR [3 1] shrank to [1] in a record
// proposed just before broker 1's disk was lost and committed just after, and the
// partition had only a wiped member left).
func (w *World) safeToWipe(n *node) bool {
	im := w.committedImage()
	for _, name := range im.TopicNames() {
		for p := int32(0); p < im.Topic(name).Partitions; p++ {
			st, assigned, _ := im.Partition(name, p)
			if assigned && w.soleISR(name, st, n) {
				return false
			}
		}
	}
	for _, p := range slices.Concat(w.meta.pending, w.meta.late) {
		switch p.rec.Kind {
		case meta.KindPartitionChange:
			if w.soleISR(p.rec.Topic, p.rec.State, n) {
				return false
			}
		case meta.KindTopicCreated:
			for _, st := range p.rec.PartitionStates {
				if w.soleISR(p.rec.Topic, st, n) {
					return false
				}
			}
		}
	}
	return true
}

// soleISR says whether n is the only member of st's ISR and that is below the topic's
// min.insync.replicas.
func (w *World) soleISR(topic string, st meta.PartitionState, n *node) bool {
	return len(st.ISR) == 1 && st.ISR[0] == n.id+1 && len(st.ISR) < w.minInsync(topic)
}

// minInsync is a topic's min.insync.replicas in this run.
func (w *World) minInsync(topic string) int {
	v, _ := clusterDefault(w.cfg, "min.insync.replicas")
	for _, t := range w.cfg.Topics {
		if t.Name == topic && t.Configs["min.insync.replicas"] != "" {
			v = t.Configs["min.insync.replicas"]
		}
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n
	}
	return 1
}

func newNodeFS(n *node) *disk.MemFS {
	fs := disk.NewMemFS()
	fs.SetFault(n.diskFault)
	return fs
}

func newNodeState(n *node) *disk.MemState {
	s := disk.NewMemState()
	s.SetFault(n.stateFault)
	return s
}

// storageID is the id of the node's current disk: node id and how many disks it lost.
func (n *node) storageID() (id [16]byte) {
	binary.BigEndian.PutUint32(id[0:], uint32(n.id+1))
	binary.BigEndian.PutUint32(id[4:], uint32(n.disksLost+1))
	return id
}

// wipe replaces the stopped node's disks with empty ones.
func (n *node) wipe() {
	n.disksLost++
	n.fs = newNodeFS(n)
	n.state = newNodeState(n)
	n.marks = disk.NewMemMarks()
	n.rotted = map[core.TopicPartition]bool{}
	n.resetFrom = map[core.TopicPartition]int64{}
	n.w.stats.Faults["disk-lost"]++
}

// powerLoss cuts the power of every node at the same instant: each loses its unsynced
// bytes, as in a crash, and restarts after its own drawn downtime.
func (w *World) powerLoss() {
	w.tlMark(-1, "powerloss", "power loss of every node at once: unsynced bytes lost "+
		"everywhere")
	var crashed []*node
	for _, n := range w.nodes {
		if n.up {
			n.crash()
			crashed = append(crashed, n)
		}
	}
	for _, n := range crashed {
		gen := n.gen
		w.after(w.duration(fPowerLoss), KindRestart, n.id, gen, 0, func() {
			if n.gen == gen {
				n.restart()
			}
		})
	}
}

// tlCut draws a cut on the lanes of the peer links it blocks.
func (w *World) tlCut(a, b int32, oneWay bool, until int64, text string) {
	if w.tl == nil {
		return
	}
	w.tl.span(peerActor(a, b), "partition", w.now, until, text)
	if !oneWay {
		w.tl.span(peerActor(b, a), "partition", w.now, until, text)
		return
	}
	w.tl.span(peerActor(b, a), "partition", w.now, until, text)
	w.tl.mark(a, "oneway", w.now, text)
}

// tlIsolated shades the lane of a node cut off from its peers.
func (w *World) tlIsolated(id int32, until int64, text string) {
	if w.tl != nil {
		w.tl.span(id, "partition", w.now, until, text)
	}
}
