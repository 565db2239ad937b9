package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/linearizability"
)

// Stats counts what happened in a run, for its summary.
type Stats struct {
	Events    uint64
	VirtualNs int64
	Faults    map[string]int // injected faults by kind, restarts, disk errors
	Codes     map[string]int // error codes clients saw, "api:ERROR_NAME"
	// SessionFetches counts incremental fetch-session answers readers got (reader_session.go).
	SessionFetches int
	// Muted counts replies that muted their connection (client quotas, rule E8).
	Muted int
	// Compact counts the compaction workload's writes, reads and cleans (compact.go).
	Compact CompactStats
	// ACLs counts the ACL workload's grant changes and verdicts (acl_check.go).
	ACLs map[string]int
}

// Result is the outcome of one run.
type Result struct {
	Seed     uint64
	Pass     bool
	Trace    string
	Config   Config
	Failures []Failure
	Report   *linearizability.Report
	Stats    Stats
	LogTail  string
	// PendingAtFailure and PendingAtEnd describe every broker's pending work at the
	// first failure and at the end of a failed run (Broker.Pending; pending.go).
	PendingAtFailure, PendingAtEnd []string
}

func (w *World) result(rep *linearizability.Report) Result {
	w.stats.Events = w.tr.events
	w.stats.VirtualNs = w.now
	if w.compact != nil {
		w.stats.Compact = w.compact.stats
	}
	var atEnd []string
	if len(w.failures) > 0 {
		atEnd = w.pendingReport("at the end of the run")
	}
	return Result{Seed: w.cfg.Seed, Pass: len(w.failures) == 0, Trace: w.tr.sum(),
		Config: w.cfg, Failures: w.failures, Report: rep, Stats: w.stats,
		LogTail: w.LogTail(), PendingAtFailure: w.pendingAtFail, PendingAtEnd: atEnd}
}

// Line is the one-line verdict: PASS or FAIL, the seed and the trace hash.
func (r *Result) Line() string {
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	return fmt.Sprintf("%s seed=%d trace=%s events=%d virtual=%.1fs", verdict, r.Seed,
		r.Trace, r.Stats.Events, float64(r.Stats.VirtualNs)/1e9)
}

// Summary describes the run: configuration, faults injected, errors seen, history
// totals and failures.
func (r *Result) Summary() []string {
	lines := append([]string{fmt.Sprintf("seed %d", r.Seed)}, r.Config.Summary()...)
	lines = append(lines, "injected: "+sortedCounts(r.Stats.Faults))
	lines = append(lines, "client errors: "+sortedCounts(r.Stats.Codes))
	if c := r.Stats.Compact; c.Writes > 0 {
		lines = append(lines, fmt.Sprintf("compaction: %d writes (%d acknowledged, %d "+
			"unknown), %d reads (%d checked, %d abandoned), %d cleans swapped %d segments "+
			"in, removing %d records", c.Writes, c.Acked, c.Unknown, c.Reads, c.Checked,
			c.Abandoned, c.Cleans, c.Segments, c.RecordsRemoved))
	}
	if r.Stats.ACLs != nil {
		lines = append(lines, "acl workload: "+sortedCounts(r.Stats.ACLs))
	}
	if r.Report != nil {
		lines = append(lines, r.Report.Summary(20)...)
	}
	for i, f := range r.Failures {
		if i == 20 {
			lines = append(lines, fmt.Sprintf("... and %d more failures", len(r.Failures)-i))
			break
		}
		lines = append(lines, "FAILURE "+f.String())
	}
	return lines
}

// Kinds lists the distinct failure kinds, sorted.
func (r *Result) Kinds() []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range r.Failures {
		k := f.Kind
		if f.Kind == "anomaly" {
			k, _, _ = strings.Cut(f.Detail, " ")
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Has reports whether the run failed with the given failure or anomaly kind.
func (r *Result) Has(kind string) bool {
	for _, k := range r.Kinds() {
		if k == kind {
			return true
		}
	}
	return false
}

func sortedCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// WriteArtifacts reruns a failed seed verbosely (the run is deterministic) and writes
// into dir: summary.txt, events.log (every event and every node's debug log on the
// virtual clock), history.txt/.json, pending.txt (every broker's pending work at the
// first failure and at the end; also in summary.txt), log-tail.txt (the failing run's
// last log lines), porcupine's HTML view of the failing partition or committed-offset
// register, and timeline.html (timeline_page.go), which links that view. It returns an
// error if the rerun's trace differs, which would itself be a determinism bug.
func WriteArtifacts(cfg Config, first Result, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	events, err := os.Create(filepath.Join(dir, "events.log"))
	if err != nil {
		return err
	}
	defer events.Close()
	w, err := New(cfg, Options{Verbose: events, Timeline: true})
	if err != nil {
		return err
	}
	res := w.Run()
	var b strings.Builder
	for _, l := range res.Summary() {
		b.WriteString(l + "\n")
	}
	b.WriteString(res.Line() + "\n")
	b.WriteString("\n" + pendingText(&res))
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "pending.txt"), []byte(pendingText(&res)),
		0o644); err != nil {
		return err
	}
	// The failing run's own ring-buffered log tail, kept in case the rerun diverges.
	if err := os.WriteFile(filepath.Join(dir, "log-tail.txt"), []byte(first.LogTail),
		0o644); err != nil {
		return err
	}
	if err := writeHistory(w.History(), filepath.Join(dir, "history.txt")); err != nil {
		return err
	}
	raw, err := json.Marshal(w.History())
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "history.json"), raw, 0o644); err != nil {
		return err
	}
	var views []string // porcupine's pages, linked from timeline.html
	if res.Report != nil {
		for _, g := range res.Report.Registers {
			if g.Result != "Illegal" {
				continue
			}
			name := fmt.Sprintf("porcupine-offsets-%s-%s.html", g.Key.Group, g.Key.TP)
			err := linearizability.VisualizeRegister(w.History(), g.Key,
				filepath.Join(dir, name), 30*time.Second)
			if err != nil {
				return err
			}
			views = append(views, name)
			break
		}
		if tp, ok := res.Report.Failing(); ok {
			name := fmt.Sprintf("porcupine-%s.html", tp)
			err := linearizability.Visualize(w.History(), tp, filepath.Join(dir, name),
				30*time.Second)
			if err != nil {
				return err
			}
			views = append(views, name)
		}
	}
	if _, err := w.writeTimeline(&res, dir, views); err != nil {
		return err
	}
	if res.Trace != first.Trace {
		return fmt.Errorf("the verbose rerun's trace %s differs from the run's %s: the "+
			"simulation is not deterministic", res.Trace, first.Trace)
	}
	return nil
}

func writeHistory(h *linearizability.History, path string) error {
	var b strings.Builder
	for _, c := range h.Crashes {
		fmt.Fprintf(&b, "%s crash node=%d\n", fmtTime(c.At), c.Node)
	}
	for _, d := range h.Deletions {
		fmt.Fprintf(&b, "%s topic %s deleted (later operations: the next incarnation)\n",
			fmtTime(d.At), d.Topic)
	}
	for _, f := range h.Finals {
		fmt.Fprintf(&b, "final %s read [%d, %d)\n", f.TP, f.Start, f.End)
	}
	for i := range h.Ops {
		b.WriteString(describeOp(&h.Ops[i]) + "\n")
	}
	for _, e := range h.Groups {
		fmt.Fprintf(&b, "group %s %s client=%d node-incarnation=%d member=%s gen=%d call %s "+
			"return %s leader=%s protocol=%s partitions=%v plan=%q code=%d op=%d\n", e.Group,
			e.Kind, e.Client, e.Incarnation, e.Member, e.Generation, fmtTime(e.Call),
			fmtTime(e.Return), e.Leader, e.Protocol, e.Partitions, e.Plan, e.Code, e.Op)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func describeOp(op *linearizability.Op) string {
	ret := "never"
	if op.Outcome != linearizability.Unknown {
		ret = fmtTime(op.Return)
	}
	head := fmt.Sprintf("op %d client=%d %s call %s return %s %s", op.ID, op.Client,
		core.TopicPartition(op.TP), fmtTime(op.Call), ret, op.Outcome)
	if op.Kind == linearizability.OpAppend {
		return fmt.Sprintf("%s append write=%s n=%d acks=%d idem=%v offset=%d err=%d", head,
			op.Write, len(op.Values), op.Acks, op.Idempotent, op.Offset, op.ErrCode)
	}
	first, last := int64(-1), int64(-1)
	if n := len(op.Records); n > 0 {
		first, last = op.Records[0].Offset, op.Records[n-1].Offset
	}
	return fmt.Sprintf("%s read from=%d records=[%d,%d] hwm=%d start=%d final=%v", head,
		op.FetchOffset, first, last, op.HWM, op.LogStart, op.Final)
}
