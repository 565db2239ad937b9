package main

// sluice bench chart: the picture of a bench run (internal/benchchart), written by
// scripts/bench.sh next to docs/benchmarks.md.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sluicemq/sluice/internal/benchchart"
)

func runBenchChart(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench chart", "sluice bench chart --in RESULTS --out FILE.svg "+
		"[--note TEXT]", stderr)
	in := fs.String("in", "", "results `file`: the FIGURE and CONTEXT lines of one run "+
		"(scripts/bench.sh keeps them in bin/bench-results/)")
	out := fs.String("out", "docs/images/bench.svg", "SVG `file` to write")
	note := fs.String("note", "", "a line added to the caption")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *in == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "bench chart: want --in RESULTS and no other arguments")
		return 2
	}
	if err := benchChart(*in, *out, *note); err != nil {
		fmt.Fprintln(stderr, "bench chart:", err)
		return 1
	}
	fmt.Fprintf(stdout, "bench chart: wrote %s\n", *out)
	return 0
}

// benchChart reads a results file and writes its picture, replacing out only once the
// whole picture is drawn.
func benchChart(in, out, note string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	run, err := benchchart.Parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if len(run.Figures) == 0 {
		return fmt.Errorf("%s: no FIGURE line (did the bench run?)", in)
	}
	var b bytes.Buffer
	if err := benchchart.Render(&b, run, benchchart.Options{Note: note}); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
