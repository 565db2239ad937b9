package sim

// The brokers' pending work in a failed seed's report.
//
// When a run records its first failure, and again when it ends with failures, every
// node's Broker.Pending is captured: what each broker was waiting for (parked
// produces and fetches, admin operations, proposals, offset writes, logs to open,
// syncs in flight). WriteArtifacts prints both in summary.txt and pending.txt. The
// capture only reads the brokers, so it cannot change a run or its trace.

import (
	"fmt"
	"strings"
)

// pendingReport describes every node's pending work at virtual time now.
func (w *World) pendingReport(when string) []string {
	lines := []string{fmt.Sprintf("pending work %s (%s):", when, fmtTime(w.now))}
	for _, n := range w.nodes {
		lines = append(lines, n.pendingLines()...)
	}
	return lines
}

// pendingLines is one node's part of pendingReport.
func (n *node) pendingLines() (lines []string) {
	head := fmt.Sprintf("  node %d (incarnation %d)", n.id+1, n.gen)
	switch {
	case n.b == nil:
		return []string{head + ": never started"}
	case !n.up:
		return []string{head + ": down"}
	}
	defer func() {
		// The broker may have panicked inside a step (an invariant): its state can be
		// half-changed, and the report must not hide the original failure.
		if p := recover(); p != nil {
			lines = append(lines, fmt.Sprintf("    (report stopped: %v)", p))
		}
	}()
	ps := n.b.Pending()
	if n.paused {
		head += " paused"
	}
	lines = append(lines, fmt.Sprintf("%s: %d pending", head, len(ps)))
	for _, p := range ps {
		lines = append(lines, "    "+p.String())
	}
	return lines
}

// notePending captures the pending work at the first failure.
func (w *World) notePending() {
	if w.pendingAtFail == nil {
		w.pendingAtFail = w.pendingReport("at the first failure")
	}
}

// pendingText joins a result's pending reports for the artifacts.
func pendingText(r *Result) string {
	var b strings.Builder
	for _, part := range [][]string{r.PendingAtFailure, r.PendingAtEnd} {
		for _, l := range part {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
