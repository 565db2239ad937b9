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
	// Timeout bounds porcupine's search per partition or register (0: 20s). A search
	// that runs out is searched again with RetryTimeout (0: 4 × Timeout); one that runs
	// out of that too fails the check (budget.go).
	Timeout      time.Duration
	RetryTimeout time.Duration
	// PorcupineMaxOps: partitions with more operations are decided by the exact
	// O(n log n) checker alone (porcupine's memory grows with the square of the history;
	// 0: 4000).
	PorcupineMaxOps int
}

// Skipped is the porcupine result of a partition not searched because the anomaly
// checker already found it broken.
const Skipped porcupine.CheckResult = "Skipped"

// TooLarge is the porcupine result of a partition whose history exceeded
// Options.PorcupineMaxOps; the exact timing checker still decided it.
const TooLarge porcupine.CheckResult = "TooLarge"

// PartitionResult is the linearizability verdict on one partition: porcupine's, and
// the exact timing checker's explanation when it found a violation.
type PartitionResult struct {
	TP     core.TopicPartition
	Ops    int
	Result porcupine.CheckResult
	Why    string // "" when the timing checker found the history linearizable
	// Timeouts is how many of porcupine's budgets ran out (2: Result is TimedOut).
	Timeouts int
}

// Linearizable reports whether neither checker rejected the partition and porcupine's
// search, if it ran, came to an end.
func (p PartitionResult) Linearizable() bool {
	return p.Result != porcupine.Illegal && p.Result != TimedOut && p.Why == ""
}

// Report is the outcome of Check.
type Report struct {
	Anomalies  []Anomaly
	Partitions []PartitionResult
	Registers  []RegisterResult
	// Counts by anomaly kind, and totals for the summary.
	Counts       map[string]int
	Appends      int
	Acknowledged int
	Reads        int
	Commits      int // OffsetCommit operations
	CommitReads  int // successful OffsetFetch operations
	// CommitReadsMoved: successful OffsetFetch operations that returned a commit
	// another coordinator term acknowledged (clustered runs; Op.Coord).
	CommitReadsMoved int
	GroupAnswers     int // answers group members recorded (History.Groups)
	// PorcupineTimeouts counts searches whose first budget ran out; Unresolved those
	// whose retry ran out too (each fails the check).
	PorcupineTimeouts int
	Unresolved        int
}

// OK is true when no anomaly was found and every partition was linearizable (or its
// search was inconclusive).
func (r *Report) OK() bool {
	if len(r.Anomalies) > 0 {
		return false
	}
	for _, p := range r.Partitions {
		if !p.Linearizable() {
			return false
		}
	}
	for _, g := range r.Registers {
		if g.Result == porcupine.Illegal || g.Result == TimedOut {
			return false
		}
	}
	return true
}

// Failing returns the partition to show first: the first one porcupine rejected, else
// the one with the first anomaly.
func (r *Report) Failing() (core.TopicPartition, bool) {
	for _, p := range r.Partitions {
		if !p.Linearizable() {
			return p.TP, true
		}
	}
	for _, a := range r.Anomalies {
		if !isGroupKind(a.Kind) {
			return a.TP, true
		}
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
	line := fmt.Sprintf("history: %d appends (%d acknowledged), %d reads, %d offset commits, "+
		"%d offset fetches, %d group answers", r.Appends, r.Acknowledged, r.Reads, r.Commits,
		r.CommitReads, r.GroupAnswers)
	for _, k := range kinds {
		line += fmt.Sprintf(" %s=%d", k, r.Counts[k])
	}
	lines := []string{line}
	if r.CommitReadsMoved > 0 {
		lines = append(lines, fmt.Sprintf("committed offsets read at another coordinator "+
			"than the one that acknowledged them: %d", r.CommitReadsMoved))
	}
	if r.PorcupineTimeouts > 0 {
		lines = append(lines, fmt.Sprintf("porcupine timeouts: %d (%d unresolved after the "+
			"longer budget)", r.PorcupineTimeouts, r.Unresolved))
	}
	for _, p := range r.Partitions {
		if p.Result != porcupine.Ok && p.Result != Skipped && p.Result != TooLarge {
			lines = append(lines, fmt.Sprintf("porcupine %s: %s over %d operations", p.TP,
				p.Result, p.Ops))
		}
		if p.Why != "" {
			lines = append(lines, fmt.Sprintf("not linearizable %s: %s", p.TP, p.Why))
		}
	}
	for _, g := range r.Registers {
		if g.Result != porcupine.Ok {
			lines = append(lines, fmt.Sprintf("committed offsets %s: %s over %d operations",
				g.Key, g.Result, g.Ops))
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
	opt.budgets()
	rep := Report{Counts: map[string]int{}}
	for _, a := range checkRefusals(h) {
		rep.Counts[a.Kind]++
		rep.Anomalies = append(rep.Anomalies, a)
	}
	h = h.splitIncarnations()
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
		case op.Kind == OpCommit:
			rep.Commits++
		case op.Kind == OpFetchCommitted:
			rep.CommitReads++
		}
	}
	for _, tp := range h.partitions() {
		v := newView(h, tp)
		v.observe()
		v.checkValues()
		v.checkAcked()
		v.checkReadsKept()
		v.checkOrder()
		v.checkStale()
		v.checkGaps()
		v.checkLogStart()
		v.checkBelowLogStart()
		v.checkTimeLookups()
		for k, n := range v.counts {
			rep.Counts[k] += n
		}
		rep.Anomalies = append(rep.Anomalies, v.out...)
		pr := checkPartition(tp, v.operations(), len(v.out) > 0, opt)
		rep.Partitions = append(rep.Partitions, pr)
		rep.countTimeouts(pr.Timeouts)
		if !pr.Linearizable() {
			rep.Counts["not-linearizable"]++
		}
	}
	rep.GroupAnswers = len(h.Groups)
	for _, a := range checkGroups(h) {
		rep.Counts[a.Kind]++
		rep.Anomalies = append(rep.Anomalies, a)
	}
	rep.Registers = checkRegisters(h, opt)
	rep.CommitReadsMoved = readsAcrossMoves(h)
	for _, g := range rep.Registers {
		rep.countTimeouts(g.Timeouts)
		if g.Result == porcupine.Illegal {
			rep.Counts["offsets-not-linearizable"]++
		}
	}
	sort.SliceStable(rep.Anomalies, func(i, j int) bool {
		return kindRank(rep.Anomalies[i].Kind) < kindRank(rep.Anomalies[j].Kind)
	})
	return rep
}

// checkPartition runs the exact timing checker and, for histories small enough,
// porcupine. A partition with anomalies already fails, and porcupine's search over a
// broken history can take exponential time: it is left to Visualize.
func checkPartition(tp core.TopicPartition, ops []porcupine.Operation, broken bool,
	opt Options) PartitionResult {
	pr := PartitionResult{TP: tp, Ops: len(ops), Result: Skipped}
	if broken {
		return pr
	}
	pr.Why = checkTiming(ops)
	if opt.PorcupineMaxOps == 0 {
		opt.PorcupineMaxOps = 4000
	}
	if len(ops) > opt.PorcupineMaxOps {
		pr.Result = TooLarge
		return pr
	}
	res, timeouts := search(Model(), ops, opt)
	pr.Result, pr.Timeouts = res, timeouts
	if (res == porcupine.Ok && pr.Why != "") || (res == porcupine.Illegal && pr.Why == "") {
		// The two checkers decide the same question; disagreement is a checker bug.
		pr.Result = porcupine.Illegal
		pr.Why = fmt.Sprintf("checkers disagree (porcupine %s, timing %q)", res, pr.Why)
	}
	return pr
}

// countTimeouts adds one search's ran-out budgets to the totals.
func (r *Report) countTimeouts(n int) {
	if n > 0 {
		r.PorcupineTimeouts++
		r.Counts["porcupine-timeout"]++
	}
	if n > 1 {
		r.Unresolved++
		r.Counts["linearizability-timeout"]++
	}
}

// kindRank orders anomalies for reports: broken promises to writers first.
func kindRank(kind string) int {
	for i, k := range []string{LostWrite, LostRead, StaleRead, Duplicate, OutOfOrder, SequenceGap,
		SequenceRefused, LogStartTooFar, BelowLogStart, TimeMismatch, WrongOffset,
		Inconsistent, ReadPastHWM, SkippedRead, RejectedVisible, PhantomRead,
		StaleCommitAccepted, SplitBrain, GenerationRegressed} {
		if k == kind {
			return i
		}
	}
	return 100
}

// Visualize writes porcupine's HTML view of partition tp of h to path.
func Visualize(h *History, tp core.TopicPartition, path string, timeout time.Duration) error {
	v := newView(h, tp)
	v.observe()
	ops := v.operations()
	if len(ops) == 0 {
		return fmt.Errorf("no operations on %s", tp)
	}
	model := Model()
	_, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	return porcupine.VisualizePath(model, info, path)
}
