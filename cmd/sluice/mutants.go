package main

// sluice mutants runs the mutation-testing catalogue (core/mutant): for each planted bug
// it runs simulator seeds in this process with the bug selected, then the unit tests of
// the package that holds it (go test with SLUICE_MUTANT set), and prints which caught
// it. It needs the deliberately broken build:
//
//	go run -tags invariants,sluice_mutants ./cmd/sluice mutants --seeds 1..200

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/sluicemq/sluice/core/mutant"
	"github.com/sluicemq/sluice/sim"
)

func init() {
	register("mutants", command{summary: "run the planted-bug catalogue (sluice_mutants build)",
		run: runMutants})
}

type mutantsOpts struct {
	seeds    string
	only     string
	workers  int
	unit     bool
	unitTime time.Duration
	sets     setFlags
	markdown bool
	strict   bool
	baseline bool
}

// mutantRow is one line of the table.
type mutantRow struct {
	m         mutant.Mutant
	firstSeed uint64 // 0: no seed failed
	failed    int
	seeds     int
	unit      string // "yes", "no", "skipped" or "error: ..."
	wall      time.Duration
}

func (r mutantRow) simCaught() bool { return r.failed > 0 }
func (r mutantRow) survived() bool  { return !r.simCaught() && r.unit != "yes" }

func runMutants(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("mutants", "sluice mutants [--seeds A..B] [--only NAME,...] "+
		"[--unit=false] [--set NAME=VALUE]... [--markdown]", stderr)
	var o mutantsOpts
	fs.StringVar(&o.seeds, "seeds", "1..200", "simulator seeds run with each mutant")
	fs.StringVar(&o.only, "only", "", "comma-separated mutant names (default: all)")
	fs.IntVar(&o.workers, "workers", runtime.NumCPU(), "seeds run in parallel")
	fs.BoolVar(&o.unit, "unit", true, "also run each mutant's unit-test package")
	fs.DurationVar(&o.unitTime, "unit-timeout", 10*time.Minute, "bound on one go test")
	fs.Var(&o.sets, "set", "simulator setting for every seed, NAME=VALUE (repeatable)")
	fs.BoolVar(&o.markdown, "markdown", false, "print the final table as Markdown")
	fs.BoolVar(&o.baseline, "baseline", true, "first run the seeds with no mutant: a "+
		"seed that fails then would count as a false kill")
	fs.BoolVar(&o.strict, "require-caught", false, "exit 1 unless the simulator caught "+
		"every mutant run (make test's subset)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if !mutant.Build {
		fmt.Fprintln(stderr, "mutants: this binary has no mutants; build it with "+
			"-tags invariants,sluice_mutants")
		return 2
	}
	from, to, err := parseRange(o.seeds)
	if err != nil {
		fmt.Fprintf(stderr, "mutants: --seeds: %v\n", err)
		return 2
	}
	list, err := selectMutants(o.only)
	if err != nil {
		fmt.Fprintf(stderr, "mutants: %v\n", err)
		return 2
	}
	if o.baseline {
		base := runMutant(mutantsOpts{workers: o.workers, sets: o.sets},
			mutant.Mutant{Name: ""}, from, to)
		fmt.Fprintf(stdout, "baseline (no mutant): %d of %d seeds failed\n", base.failed,
			base.seeds)
		if base.failed > 0 {
			fmt.Fprintf(stdout, "FAIL: seed %d fails without a mutant; kills are not "+
				"trustworthy\n", base.firstSeed)
			return 1
		}
	}
	var rows []mutantRow
	for _, m := range list {
		row := runMutant(o, m, from, to)
		fmt.Fprintf(stdout, "%-36s sim %-14s unit %-8s %v\n", m.Name, simCell(row), row.unit,
			row.wall.Round(time.Second))
		rows = append(rows, row)
	}
	mutant.Name = ""
	printMutantTable(stdout, rows, o.markdown)
	for _, r := range rows {
		if o.strict && !r.simCaught() {
			fmt.Fprintf(stdout, "FAIL: the simulator did not catch %s\n", r.m.Name)
			return 1
		}
	}
	return 0
}

func selectMutants(only string) ([]mutant.Mutant, error) {
	if only == "" {
		return mutant.Catalogue, nil
	}
	var out []mutant.Mutant
	for _, name := range strings.Split(only, ",") {
		m, ok := mutant.Find(strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("no mutant %q in the catalogue", name)
		}
		out = append(out, m)
	}
	return out, nil
}

// runMutant plants m, runs the seeds in this process and then its unit tests.
func runMutant(o mutantsOpts, m mutant.Mutant, from, to uint64) mutantRow {
	start := time.Now()
	row := mutantRow{m: m, seeds: int(to - from + 1), unit: "skipped"}
	mutant.Name = m.Name // no world runs now; read-only while they run
	sim.RunSeeds(from, to, o.workers, o.sets, 0, func(run sim.SeedRun) {
		if run.Err == nil && run.Result.Pass {
			return
		}
		row.failed++
		if row.firstSeed == 0 {
			row.firstSeed = run.Config.Seed
		}
	})
	mutant.Name = ""
	if o.unit {
		row.unit = runUnit(m, o.unitTime)
	}
	row.wall = time.Since(start)
	return row
}

// runUnit runs m's unit-test package with m planted: "yes" when a test fails.
func runUnit(m mutant.Mutant, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-tags",
		"invariants,sluice_mutants", m.Unit)
	cmd.Env = append(os.Environ(), mutant.EnvVar+"="+m.Name)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "no"
	case ctx.Err() != nil:
		return "timeout"
	case errors.As(err, &ee) && strings.Contains(out.String(), "--- FAIL"):
		return "yes"
	case errors.As(err, &ee) && strings.Contains(out.String(), "panic:"):
		return "yes"
	default:
		return "error"
	}
}

func simCell(r mutantRow) string {
	if !r.simCaught() {
		return fmt.Sprintf("no (0/%d)", r.seeds)
	}
	return fmt.Sprintf("%d (%d/%d)", r.firstSeed, r.failed, r.seeds)
}

func printMutantTable(w io.Writer, rows []mutantRow, markdown bool) {
	simKilled, killed := 0, 0
	if markdown {
		fmt.Fprintln(w, "| mutant | area | the bug | caught by sim (first seed, n/seeds) "+
			"| caught by unit tests | survived |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|")
	}
	for _, r := range rows {
		if r.simCaught() {
			simKilled++
		}
		if !r.survived() {
			killed++
		}
		surv := ""
		if r.survived() {
			surv = "SURVIVED"
		}
		if markdown {
			fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s |\n", r.m.Name, r.m.Area, r.m.Bug,
				simCell(r), r.unit, surv)
			continue
		}
		fmt.Fprintf(w, "%-36s | %-14s | %-8s | %s\n", r.m.Name, simCell(r), r.unit, surv)
	}
	if len(rows) > 0 {
		fmt.Fprintf(w, "\nsimulator killed %d of %d (%.0f%%); simulator or unit tests %d of %d\n",
			simKilled, len(rows), 100*float64(simKilled)/float64(len(rows)), killed, len(rows))
	}
}
