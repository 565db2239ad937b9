package linearizability

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/sluicemq/sluice/core"
)

// Options tunes Check.
type Options struct {
	// Timeout bounds porcupine's search per partition (0: 20s). A search that runs out
	// is reported as inconclusive, not as a failure.
	Timeout time.Duration
}

// Skipped is the porcupine result of a partition not searched because the anomaly
// checker already found it broken.
const Skipped porcupine.CheckResult = "Skipped"

// PartitionResult is porcupine's verdict on one partition.
type PartitionResult struct {
	TP     core.TopicPartition
	Ops    int
	Result porcupine.CheckResult
	ops    []porcupine.Operation
}

// Report is the outcome of Check.
type Report struct {
	Anomalies  []Anomaly
	Partitions []PartitionResult
	// Counts by anomaly kind, and totals for the summary.
	Counts       map[string]int
	Appends      int
	Acknowledged int
	Reads        int
}

// OK is true when no anomaly was found and every partition was linearizable (or its
// search was inconclusive).
func (r *Report) OK() bool {
	if len(r.Anomalies) > 0 {
		return false
	}
	for _, p := range r.Partitions {
		if p.Result == porcupine.Illegal {
			return false
		}
	}
	return true
}

// Failing returns the partition to show first: the first one porcupine rejected, else
// the one with the first anomaly.
func (r *Report) Failing() (core.TopicPartition, bool) {
	for _, p := range r.Partitions {
		if p.Result == porcupine.Illegal {
			return p.TP, true
		}
	}
	if len(r.Anomalies) > 0 {
		return r.Anomalies[0].TP, true
	}
	return core.TopicPartition{}, false
}

// Summary renders the report in a few lines: counts per kind, then the first anomalies.
func (r *Report) Summary(maxLines int) []string {
	kinds := make([]string, 0, len(r.Counts))
	for k := range r.Counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	line := fmt.Sprintf("history: %d appends (%d acknowledged), %d reads", r.Appends,
		r.Acknowledged, r.Reads)
	for _, k := range kinds {
		line += fmt.Sprintf(" %s=%d", k, r.Counts[k])
	}
	lines := []string{line}
	for _, p := range r.Partitions {
		if p.Result != porcupine.Ok && p.Result != Skipped {
			lines = append(lines, fmt.Sprintf("porcupine %s: %s over %d operations", p.TP,
				p.Result, p.Ops))
		}
	}
	for i, a := range r.Anomalies {
		if i == maxLines {
			lines = append(lines, fmt.Sprintf("... and %d more", len(r.Anomalies)-i))
			break
		}
		lines = append(lines, a.String())
	}
	return lines
}

// Check runs the anomaly checker and the porcupine model on every partition of h.
func Check(h *History, opt Options) Report {
	if opt.Timeout == 0 {
		opt.Timeout = 20 * time.Second
	}
	rep := Report{Counts: map[string]int{}}
	for i := range h.Ops {
		op := &h.Ops[i]
		switch {
		case op.Kind == OpAppend:
			rep.Appends++
			if op.Outcome == OK {
				rep.Acknowledged++
			}
		case op.Kind == OpRead && op.Outcome == OK:
			rep.Reads++
		}
	}
	for _, tp := range h.partitions() {
		v := newView(h, tp)
		v.observe()
		v.checkValues()
		v.checkAcked()
		v.checkOrder()
		v.checkStale()
		for k, n := range v.counts {
			rep.Counts[k] += n
		}
		rep.Anomalies = append(rep.Anomalies, v.out...)
		ops := v.operations()
		// A partition with anomalies already fails, and porcupine's search over a broken
		// history can take exponential time: leave it to Visualize.
		res := Skipped
		if len(v.out) == 0 {
			res = porcupine.CheckOperationsTimeout(Model(), ops, opt.Timeout)
		}
		rep.Partitions = append(rep.Partitions, PartitionResult{TP: tp, Ops: len(ops),
			Result: res, ops: ops})
		if res == porcupine.Illegal {
			rep.Counts["not-linearizable"]++
		}
	}
	sort.SliceStable(rep.Anomalies, func(i, j int) bool {
		return kindRank(rep.Anomalies[i].Kind) < kindRank(rep.Anomalies[j].Kind)
	})
	return rep
}

// kindRank orders anomalies for reports: broken promises to writers first.
func kindRank(kind string) int {
	for i, k := range []string{LostWrite, StaleRead, Duplicate, OutOfOrder, WrongOffset,
		Inconsistent, ReadPastHWM, SkippedRead, RejectedVisible, PhantomRead} {
		if k == kind {
			return i
		}
	}
	return 100
}

// Visualize writes porcupine's HTML view of partition tp to path.
func (r *Report) Visualize(tp core.TopicPartition, path string, timeout time.Duration) error {
	for _, p := range r.Partitions {
		if p.TP != tp {
			continue
		}
		model := Model()
		_, info := porcupine.CheckOperationsVerbose(model, p.ops, timeout)
		return porcupine.VisualizePath(model, info, path)
	}
	return fmt.Errorf("no operations on %s", tp)
}
