package sim

import (
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/disk"
)

// Read and write latency. The broker's event loop does its file I/O inline (reads for
// fetches, writes for appends, the handle cache's fsyncs at eviction, recovery at
// start), and a real event loop blocks on it. So each step's file operations cost
// virtual time, drawn once per step from the node's "io" stream: a floor per operation
// plus an exponential tail, multiplied by SlowDiskFactor during a slow-disk spell (as
// fsyncs are). The node is busy until then: the step's replies leave when it is done
// and inputs arriving meanwhile queue, as while paused, and are stepped in order when
// it is free. fsyncs the broker asks for through Env.SyncLog run off the event loop
// (node.go) and keep their own latency. Seeds drawn without it (Timing.IOMeanUs 0) keep
// their trace.

// ioLatencyByDefault turns the drawn I/O latency on for default seeds (on 70% of them).
// It was off while it found failures: an acknowledged-write loss after failed fsyncs
// (fixed by the split fsyncs, fsync.go) and invariant R3, a sync completed with none in
// flight, which was this harness's: drain kept a crashed process's queued inputs for
// the next one (docs/simulation.md, "I/O latency").
const ioLatencyByDefault = true

// countIO is called for every file operation on the node's disk.
func (n *node) countIO(op disk.Op) {
	if !n.stepping {
		return
	}
	n.stepIO++
	if op == disk.OpSync {
		n.stepSyncs++
	}
}

// slowed returns how long work that takes d at the disk's normal speed takes when it
// starts now: SlowDiskFactor times longer while a slow-disk spell lasts, normal speed
// after it ends. Multiplying the whole of d by the factor, as this did first, let one
// long step that began just before a spell's end (a recovery reading hundreds of
// segments) keep the node busy for many seconds after the spell and after the heal:
// seed 4306 failed liveness with its node busy until 20 s past the end of the faults.
func (n *node) slowed(d int64) int64 {
	f := n.w.cfg.Faults.SlowDiskFactor
	left := n.slowUntil - n.w.now
	switch {
	case left <= 0 || f <= 1:
		return d
	case d*f <= left:
		return d * f
	default:
		return left + d - left/f // left/f of the work was done during the spell
	}
}

// ioLatency reports whether this run models I/O latency.
func (n *node) ioLatency() bool { return n.w.cfg.Timing.IOMeanUs > 0 }

// busy reports whether the node is still doing the I/O of its last step.
func (n *node) busy() bool { return n.busyUntil > n.w.now }

// endStep charges the step's I/O: the node is busy for it, then sends the step's
// replies and steps what queued meanwhile.
func (n *node) endStep() {
	if n.stepIO == 0 {
		n.releaseHeld()
		return
	}
	t := n.w.cfg.Timing
	d := n.ioR.Exp(int64(n.stepIO)*t.IOFloorUs*us+int64(n.stepSyncs)*t.FsyncFloorUs*us,
		t.IOMeanUs*us)
	n.busyUntil = n.w.now + n.slowed(d)
	held := n.heldReplies
	n.heldReplies = nil
	gen := n.gen
	n.w.at(n.busyUntil, KindResume, n.id, gen, 2, func() {
		if !n.up || n.gen != gen {
			return // the process died before its I/O finished: nothing was sent
		}
		for _, r := range held {
			n.w.reply(n, r)
		}
		if !n.paused {
			n.drain()
		}
	})
}

// reportHandlerTime tells the broker how long a request's step kept the node busy in
// virtual time (its drawn I/O latency), which it charges to the request's
// request_percentage quota (core/broker quota_request.go): deterministic, from the
// node's io stream, never a real clock. A step without I/O costs nothing and reports
// nothing, and without a request quota the broker only reads it, so seeds keep their
// traces.
func (n *node) reportHandlerTime(in broker.Input) {
	r, ok := in.(broker.Request)
	if !ok || !n.up || n.busyUntil <= n.w.now {
		return
	}
	n.stepActors(broker.HandlerTime{Request: r, Nanos: n.busyUntil - n.w.now})
}

// releaseHeld sends the replies of a step that did no I/O.
func (n *node) releaseHeld() {
	held := n.heldReplies
	n.heldReplies = nil
	for _, r := range held {
		n.w.reply(n, r)
	}
}

// holdReply keeps a reply made during a step until the step's I/O is done; false when
// it may go at once.
func (n *node) holdReply(r broker.Reply) bool {
	if !n.stepping || !n.ioLatency() {
		return false
	}
	n.heldReplies = append(n.heldReplies, r)
	return true
}

// drain steps queued inputs in arrival order until the node pauses, goes down or is
// busy again. The queue belongs to one process: if a step ends it (a crash inside the
// step, crashstep.go), the rest were sent to that process and are lost with it, as stop
// dropped them. Putting them back let a SyncDone, a MetaCommitted or a TimerFired of a
// dead process reach the next one (seed 1511: invariant R3, a sync completed with
// none in flight).
func (n *node) drain() {
	queued := n.pending
	n.pending = nil
	gen := n.gen
	for i, in := range queued {
		if !n.up || n.gen != gen {
			return
		}
		if n.paused || n.busy() {
			n.pending = append(n.pending, queued[i:]...)
			return
		}
		n.step(in)
	}
}
