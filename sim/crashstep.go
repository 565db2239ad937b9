package sim

import (
	"strconv"

	"github.com/sluicemq/sluice/core/broker"
)

// A crash can land inside a multi-step I/O sequence, not only between events: half the
// crash faults arm a tripwire on the node's disk (MemFS.FreezeAfter) instead of crashing
// at once. The k-th mutating disk operation from then on is the last with any effect;
// the event that issued it (a broker step, the start or the end of a Sync) sends nothing
// (the step's effects are held until it ends and dropped) and the machine crashes right
// after it. A node that touches no disk within armedCrashMs crashes between events.

// maxTripOps bounds k: how many disk operations after the arming the crash lands.
const maxTripOps = 12

// armedCrashMs bounds how long an armed crash waits for a disk operation.
const armedCrashMs = 200

// armCrash arms a crash inside a step.
func (n *node) armCrash() {
	if n.armed {
		return
	}
	n.armed = true
	k := 1 + n.tripR.Intn(maxTripOps)
	n.fs.FreezeAfter(k)
	if n.w.tl != nil {
		n.w.tlMark(n.id, "armed", "crash armed: the power fails right after "+
			strconv.Itoa(k)+" more disk operations, inside a step (or in 200 ms)")
	}
	gen := n.gen
	n.w.after(armedCrashMs*ms, KindFault, n.id, uint64(fCrash), 1, func() {
		if n.gen == gen && n.armed {
			n.crashArmed()
		}
	})
}

// stepArmed steps the broker with its effects held; if the step froze the disk, they are
// dropped and the machine crashes, otherwise they run in order.
func (n *node) stepArmed(in broker.Input) {
	n.held = []func(){}
	n.stepActors(in)
	n.noteDeletions(in)
	held := n.held
	n.held = nil
	if n.tripped() {
		return
	}
	for _, f := range held {
		f()
	}
}

// tripped crashes the node if the armed crash's disk operation came, and reports it.
func (n *node) tripped() bool {
	if !n.armed || !n.fs.Frozen() {
		return false
	}
	n.w.stats.Faults["crash-in-step"]++
	n.crashArmed()
	return true
}

// crashArmed is the armed crash: a power loss, then a restart after a drawn downtime.
func (n *node) crashArmed() {
	n.armed = false
	n.held = nil
	n.fs.FreezeAfter(0)
	n.crash()
	n.w.scheduleRestart(n)
}

// disarm cancels an armed crash that has not landed (the heal, a process restart).
func (n *node) disarm() {
	if n.armed {
		n.armed = false
		n.fs.FreezeAfter(0)
	}
}
