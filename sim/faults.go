package sim

// The fault scheduler. Each enabled fault kind has its own chain of arrivals
// (exponentially spaced, drawn from the "faults" stream); an arrival applies the fault
// and schedules the next one. At the heal every spell ends, crashed nodes restart,
// paused nodes resume, and nodes that saw disk errors restart their process.

type faultKind uint8

const (
	fCrash faultKind = iota
	fSlowDisk
	fDiskErrors
	fClog
	fReset
	fPartition
	fPause
	fRestart
	fMetaErrors
	fReadErrors
	fRot
	// The cluster kinds (faults_cluster.go): only in worlds of more than one node.
	fSplit
	fOneWay
	fQuorumLeader
	fLeaderPeers
	fDiskLoss
	fPowerLoss
	fCascade
)

var faultNames = [...]string{"crash", "slowdisk", "diskerrors", "clog", "reset",
	"partition", "pause", "restart", "metaerrors", "readerrors", "rot",
	"split", "oneway", "quorumleader", "leaderpeers", "diskloss", "powerloss", "cascade"}

func (w *World) spell(k faultKind) Spell {
	f := w.cfg.Faults
	return [...]Spell{f.Crash, f.SlowDisk, f.DiskErrors, f.Clog, f.Reset, f.Partition,
		f.Pause, f.Restart, f.MetaErrors, f.ReadErrors, f.Rot, f.Split, f.OneWay,
		f.QuorumLeader, f.LeaderPeers, f.DiskLoss, f.PowerLoss, f.Cascade}[k]
}

func (w *World) startFaults() {
	for k := fCrash; k <= fCascade; k++ {
		if isClusterFault(k) && len(w.nodes) < 2 {
			continue
		}
		if s := w.spell(k); s.On && s.EveryMs > 0 {
			w.scheduleFault(k)
		}
	}
}

func (w *World) scheduleFault(k faultKind) {
	d := w.faultR.Exp(ms, w.spell(k).EveryMs*ms)
	w.after(d, KindFault, -1, uint64(k), 0, func() {
		if w.phase != phaseSafety {
			return
		}
		w.injectFault(k)
		w.scheduleFault(k)
	})
}

// duration draws how long one spell of kind k lasts.
func (w *World) duration(k faultKind) int64 {
	return w.faultR.Exp(ms, w.spell(k).ForMs*ms)
}

func (w *World) injectFault(k faultKind) {
	if isClusterFault(k) {
		if w.injectClusterFault(k) {
			w.stats.Faults[faultNames[k]]++
		}
		return
	}
	n := w.nodes[w.faultR.Intn(len(w.nodes))]
	switch k {
	case fCrash:
		if !n.up {
			return
		}
		if n.tripR.Chance(0.5) {
			n.armCrash() // crashstep.go
			break
		}
		n.crash()
		w.scheduleRestart(n)
	case fSlowDisk:
		n.slowUntil = max(n.slowUntil, w.now+w.duration(k))
		w.tlSpell(n, k, n.slowUntil)
	case fDiskErrors:
		n.errUntil = max(n.errUntil, w.now+w.duration(k))
		w.tlSpell(n, k, n.errUntil)
	case fClog:
		n.clogUntil = max(n.clogUntil, w.now+w.duration(k))
		w.tlSpell(n, k, n.clogUntil)
	case fReset:
		conns := w.openConns()
		if len(conns) == 0 {
			return
		}
		c := conns[w.faultR.Intn(len(conns))]
		w.tlReset(c)
		w.resetConn(c)
	case fPartition:
		w.partition(w.duration(k))
	case fPause:
		n.pause(w.duration(k))
	case fMetaErrors:
		n.metaErrUntil = max(n.metaErrUntil, w.now+w.duration(k))
		w.tlSpell(n, k, n.metaErrUntil)
	case fReadErrors:
		n.readErrUntil = max(n.readErrUntil, w.now+w.duration(k))
		w.tlSpell(n, k, n.readErrUntil)
	case fRot:
		if !n.rot() {
			return
		}
		w.tlMark(n.id, "rot", "bit rot or stale blocks injected on the disk")
	case fRestart:
		if !n.up {
			return
		}
		n.stop("process killed")
		gen := n.gen
		w.after(w.duration(k), KindRestart, n.id, gen, 0, func() {
			if n.gen == gen {
				n.restart()
			}
		})
	}
	w.stats.Faults[faultNames[k]]++
}

// scheduleRestart restarts a crashed node after a drawn downtime.
func (w *World) scheduleRestart(n *node) {
	gen := n.gen
	w.after(w.duration(fCrash), KindRestart, n.id, gen, 0, func() {
		if n.gen == gen {
			n.restart()
		}
	})
}

// partition cuts one client off the node for d: both directions, or only one.
func (w *World) partition(d int64) {
	cl := w.clients[w.faultR.Intn(len(w.clients))].base()
	b := w.blocked[cl.actor]
	if b == nil {
		b = &[2]int64{}
		w.blocked[cl.actor] = b
	}
	dirs := []int{toNode, toClient}
	if w.faultR.Chance(w.cfg.Faults.OneWayChance) {
		dirs = dirs[w.faultR.Intn(2):][:1]
	}
	for _, dir := range dirs {
		b[dir] = max(b[dir], w.now+d)
	}
	w.tlPartition(cl, b[toNode], b[toClient])
}

// heal ends the safety phase: no new faults, every spell over, every node up.
func (w *World) heal() {
	w.phase = phaseHeal
	w.healAt = w.now
	w.tlMark(-1, "heal", "faults stop: spells end, nodes restart, producers drain")
	for _, b := range w.blocked {
		b[toNode], b[toClient] = min(b[toNode], w.now), min(b[toClient], w.now)
	}
	if w.cutsActive() {
		w.cutUntil = w.now
		w.meta.netChanged() // cuts between nodes end: the quorum reaches everyone again
	}
	for _, n := range w.nodes {
		n.slowUntil, n.errUntil, n.clogUntil = w.now, w.now, w.now
		n.metaErrUntil, n.readErrUntil = w.now, w.now
		w.stallFetcher(n, w.now) // a cascade's stuck fetcher
		n.disarm()
		switch {
		case !n.up:
			n.restart()
		case n.hadDiskErr:
			n.restartProcess()
		case n.paused:
			n.resume()
		}
	}
	for _, c := range w.clients {
		c.heal()
	}
	w.waitForDrain()
}

// waitForDrain starts the final read once no client has outstanding work, or once half
// the liveness budget is spent (reporting who is stuck).
func (w *World) waitForDrain() {
	if w.phase != phaseHeal {
		return
	}
	stuck := w.stuckClients()
	if len(stuck) == 0 {
		w.startFinal()
		return
	}
	if w.now-w.healAt >= w.cfg.HealMs*ms/2+w.drainExtra {
		if w.followersCatchingUp() {
			return // waitForDrain was scheduled again with more time
		}
		for _, s := range stuck {
			w.fail("liveness", "%s %dms after the faults stopped", s, (w.now-w.healAt)/ms)
		}
		w.startFinal()
		return
	}
	w.after(50*ms, KindPhase, -1, uint64(phaseHeal), 1, w.waitForDrain)
}

// maxDrainExtensions bounds how often the drain gets more time while followers catch up.
const maxDrainExtensions = 8

// followersCatchingUp gives the drain a quarter budget more, a bounded number of times,
// while the cluster is not healed but its followers' logs grew since the last look: a
// producer with acks=all waits for its partition's ISR to fill again, and a follower
// far behind catches up one segment per fetch (as Kafka's does), so with tiny segments
// and a slow disk it can need more than half the budget while progressing all along
// (seed 524: 1 KiB segments, ~1,000 records a second, answered 65 ms late). Liveness
// asks for progress, and it is making some.
func (w *World) followersCatchingUp() bool {
	if !w.clustered() || w.drainExtensions >= maxDrainExtensions ||
		len(w.replicationGaps()) == 0 {
		return false
	}
	sum := w.followerEnds()
	grew := sum > w.drainMark
	w.drainMark = sum
	if !grew {
		return false
	}
	w.drainExtensions++
	w.drainExtra += w.cfg.HealMs * ms / 4
	w.after(50*ms, KindPhase, -1, uint64(phaseHeal), 1, w.waitForDrain)
	return true
}

// followerEnds sums the log ends of every follower replica on the up nodes.
func (w *World) followerEnds() int64 {
	var sum int64
	for _, n := range w.nodes {
		if !n.up || n.b == nil {
			continue
		}
		for _, st := range n.b.PartitionStats() {
			if !st.Leader {
				sum += st.LogEnd
			}
		}
	}
	return sum
}

func (w *World) stuckClients() []string {
	var out []string
	for _, c := range w.clients {
		if s := c.busy(); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (w *World) startFinal() {
	w.phase = phaseFinal
	w.tlMark(-1, "final", "final read of every partition begins")
	w.final = newFinalReader(w, int32(100+len(w.clients)))
	w.final.start()
}
