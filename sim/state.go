package sim

import (
	"fmt"
	"syscall"

	"github.com/sluicemq/sluice/disk"
)

// The node-state store (disk.MemState) fails as the pebble-backed one does
// (docs/storage.md, "Node-local state"): during a disk-error spell each of its log
// writes and syncs fails with the spell's chance; the write is then in doubt and the
// store refuses every later write until the process restarts, when a prefix of the
// writes in doubt survives (the write-ahead log keeps a prefix of its records). Its
// draws come from their own stream, so seeds without a disk-error spell keep their
// trace.

// initState hooks the node's state store to the fault model.
func (n *node) initState() {
	n.stateR = newStream(n.w.cfg.Seed, fmt.Sprintf("node%d/state", n.id))
	n.state.SetFault(n.stateFault)
}

// stateFault is the MemState fault hook.
func (n *node) stateFault(op disk.Op, _ string) error {
	if n.w.now >= n.errUntil || !n.stateR.Chance(n.w.cfg.Faults.DiskErrorChance) {
		return nil
	}
	n.hadDiskErr = true // the heal restarts the process, which clears the failure
	n.w.stats.Faults["state-error-"+op.String()]++
	n.w.tr.note("state-error", int64(op), int64(n.id))
	if n.stateR.Chance(0.5) {
		return syscall.ENOSPC
	}
	return syscall.EIO
}

// reopenState is the state store's restart at boot: it keeps a drawn prefix of the
// writes in doubt and works again.
func (n *node) reopenState() {
	if lost := n.state.InDoubt(); lost > 0 {
		n.w.stats.Faults["state-in-doubt"] += lost
	}
	n.state.Reopen(n.stateR)
}

// ackTrim records that the DeleteRecords call hist.Trims[i] was acknowledged with low
// watermark low: from now on no record below it may be served, crashes or not. i < 0
// (no call recorded) is ignored.
func (w *World) ackTrim(i int, low int64) {
	if i < 0 {
		return
	}
	tr := &w.hist.Trims[i]
	tr.Acked, tr.Return, tr.LowWatermark = true, w.now, low
}
