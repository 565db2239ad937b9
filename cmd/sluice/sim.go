package main

// sluice sim: run the deterministic simulator (package sim) on one seed or a range.
//
//	sluice sim --seed 42
//	sluice sim --seeds 1..1000 [--workers 2]
//	sluice sim --seed 42 --set log.flush.policy=never --set faults.crash=on --duration 20s
//
// The last line of a single-seed run reads "PASS seed=N trace=HASH ..." or "FAIL ...";
// the exit status is 0 on pass and 1 on failure. A failure prints the command that
// reproduces it on this commit and writes its event log, history, porcupine view and
// timeline.html to --out/seed-N; --html writes timeline.html for a passing seed too.

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/sim"
)

func init() {
	register("sim", command{summary: "run deterministic simulator seeds", run: runSim})
}

// setFlags collects repeated --set NAME=VALUE flags in order.
type setFlags [][2]string

func (s *setFlags) String() string { return fmt.Sprint(*s) }

func (s *setFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	*s = append(*s, [2]string{name, value})
	return nil
}

type simOpts struct {
	seed     uint64
	seeds    string
	sets     setFlags
	duration time.Duration
	workers  int
	out      string
	verbose  bool
	events   string
	coverage bool
	html     bool
}

func runSim(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("sim", "sluice sim (--seed N | --seeds A..B) [--set NAME=VALUE]... "+
		"[--duration D]", stderr)
	var o simOpts
	fs.Uint64Var(&o.seed, "seed", 0, "run this one seed")
	fs.StringVar(&o.seeds, "seeds", "", "run a range of seeds, A..B")
	fs.Var(&o.sets, "set", "override a broker, topic, fault or client setting, NAME=VALUE "+
		"(repeatable; see --help-settings)")
	fs.DurationVar(&o.duration, "duration", 0, fmt.Sprintf("virtual time of the faulty "+
		"phase (default %v)", time.Duration(sim.DefaultSafetyMs)*time.Millisecond))
	fs.IntVar(&o.workers, "workers", runtime.NumCPU(), "seeds run in parallel (--seeds)")
	fs.StringVar(&o.out, "out", "sim-failures", "folder for failure artifacts")
	fs.BoolVar(&o.verbose, "v", false, "print the configuration and summary of every run")
	fs.StringVar(&o.events, "events", "", "write the event log and debug logs of the "+
		"run to this file (--seed)")
	fs.BoolVar(&o.html, "html", false, "write timeline.html (nodes, clients, faults and "+
		"operations on the virtual clock) to --out/seed-N for a passing seed too (--seed)")
	fs.BoolVar(&o.coverage, "coverage", false, "report the (API, error code) pairs and "+
		"the code probes of core/ the seeds reached, and those never reached")
	help := fs.Bool("help-settings", false, "list the names --set accepts")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // -h: the usage is printed
		}
		return 2
	}
	if *help {
		printSimSettings(stdout)
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sim: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if o.seeds != "" {
		if o.html {
			fmt.Fprintln(stderr, "sim: --html takes one --seed (a failing seed of a range "+
				"gets timeline.html in its artifacts anyway)")
			return 2
		}
		from, to, err := parseRange(o.seeds)
		if err != nil {
			fmt.Fprintf(stderr, "sim: --seeds: %v\n", err)
			return 2
		}
		return simRange(o, from, to, stdout, stderr)
	}
	return simOne(o, stdout, stderr)
}

func printSimSettings(w io.Writer) {
	fmt.Fprintln(w, "simulator settings:")
	for _, h := range sim.SettingHelp {
		fmt.Fprintln(w, "  "+h)
	}
	fmt.Fprintln(w, "broker and topic settings (broker.Config.Set):")
	fmt.Fprintln(w, "  "+strings.Join(broker.SettingNames(), " "))
}

func parseRange(s string) (uint64, uint64, error) {
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		return 0, 0, fmt.Errorf("want A..B, got %q", s)
	}
	from, err1 := strconv.ParseUint(a, 10, 64)
	to, err2 := strconv.ParseUint(b, 10, 64)
	if err1 != nil || err2 != nil || to < from {
		return 0, 0, fmt.Errorf("want A..B with A <= B, got %q", s)
	}
	if to-from >= 10_000_000 {
		return 0, 0, fmt.Errorf("at most 10 million seeds per run")
	}
	return from, to, nil
}

func (o simOpts) safetyMs() int64 { return o.duration.Milliseconds() }

func simOne(o simOpts, stdout, stderr io.Writer) int {
	var opts sim.Options
	if o.events != "" {
		f, err := os.Create(o.events)
		if err != nil {
			fmt.Fprintf(stderr, "sim: %v\n", err)
			return 2
		}
		defer f.Close()
		buf := bufio.NewWriterSize(f, 1<<20)
		defer buf.Flush()
		opts.Verbose = buf
	}
	opts.Coverage = o.coverage
	opts.Timeline = o.html
	run := sim.RunOne(o.seed, o.sets, o.safetyMs(), opts)
	if run.Err != nil {
		fmt.Fprintf(stderr, "sim: %v\n", run.Err)
		return 2
	}
	res := run.Result
	if o.verbose || !res.Pass {
		for _, l := range res.Summary() {
			fmt.Fprintln(stdout, l)
		}
	}
	if !res.Pass {
		reportFailure(o, run, stdout)
	} else if o.html {
		// A failure's artifacts hold the page already; a passing seed gets it here.
		path, err := run.WriteTimeline(filepath.Join(o.out, fmt.Sprintf("seed-%d", o.seed)), nil)
		if err != nil {
			fmt.Fprintf(stderr, "sim: timeline: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "timeline: %s\n", path)
	}
	if run.Coverage != nil {
		run.Coverage.WriteReport(stdout)
	}
	fmt.Fprintf(stdout, "%s wall=%v\n", res.Line(), run.Wall.Round(time.Millisecond))
	if !res.Pass {
		return 1
	}
	return 0
}

func simRange(o simOpts, from, to uint64, stdout, stderr io.Writer) int {
	start := time.Now()
	var failed []uint64
	var virtual int64
	var bad error
	var cov *sim.Coverage
	if o.coverage {
		cov = sim.NewCoverage()
	}
	opts := sim.Options{Coverage: o.coverage}
	sim.RunSeedsWith(from, to, o.workers, o.sets, o.safetyMs(), opts, func(run sim.SeedRun) {
		if run.Err != nil {
			bad = run.Err
			return
		}
		if cov != nil {
			cov.Add(run.Coverage)
		}
		res := run.Result
		virtual += res.Stats.VirtualNs
		if o.verbose {
			fmt.Fprintln(stdout, res.Line())
		}
		if !res.Pass {
			failed = append(failed, res.Seed)
			fmt.Fprintf(stdout, "%s kinds=%s\n", res.Line(), strings.Join(res.Kinds(), ","))
			reportFailure(o, run, stdout)
		}
	})
	if bad != nil {
		fmt.Fprintf(stderr, "sim: %v\n", bad)
		return 2
	}
	wall := time.Since(start)
	if cov != nil {
		cov.WriteReport(stdout)
	}
	n := to - from + 1
	fmt.Fprintf(stdout, "%d seeds in %v: %.0f seeds/min, %.1f simulated s per wall s\n", n,
		wall.Round(time.Millisecond), float64(n)/wall.Minutes(), float64(virtual)/1e9/wall.Seconds())
	if len(failed) > 0 {
		ids := make([]string, len(failed))
		for i, s := range failed {
			ids[i] = strconv.FormatUint(s, 10)
		}
		fmt.Fprintf(stdout, "FAIL seeds=%d..%d failed=%d: %s\n", from, to, len(failed),
			strings.Join(ids, " "))
		return 1
	}
	fmt.Fprintf(stdout, "PASS seeds=%d..%d\n", from, to)
	return 0
}

// reportFailure prints the reproduction command and writes the failure's artifacts.
func reportFailure(o simOpts, run sim.SeedRun, stdout io.Writer) {
	seed := run.Result.Seed
	cmd := fmt.Sprintf("sluice sim --seed %d", seed)
	for _, kv := range o.sets {
		cmd += fmt.Sprintf(" --set %s=%s", kv[0], kv[1])
	}
	if o.duration > 0 {
		cmd += " --duration " + o.duration.String()
	}
	fmt.Fprintf(stdout, "reproduce (commit %s): %s\n", commit(), cmd)
	dir := filepath.Join(o.out, fmt.Sprintf("seed-%d", seed))
	if err := sim.WriteArtifacts(run.Config, run.Result, dir); err != nil {
		fmt.Fprintf(stdout, "artifacts: %v\n", err)
		return
	}
	fmt.Fprintf(stdout, "artifacts: %s (timeline.html, summary.txt, pending.txt, events.log, "+
		"history.txt, porcupine-*.html)\n", dir)
}

// buildCommit can be set at link time (-ldflags "-X main.buildCommit=$(git rev-parse
// HEAD)") for binaries built without VCS stamping.
var buildCommit string

// commit names the build's git revision: the link-time value, else the build info when
// go build embedded it, else git in the current directory.
func commit() string {
	if buildCommit != "" {
		return buildCommit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if dirty {
				rev += "+uncommitted-changes"
			}
			return rev
		}
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	if err := exec.Command("git", "diff", "--quiet", "HEAD").Run(); err != nil {
		rev += "+uncommitted-changes"
	}
	return rev
}
