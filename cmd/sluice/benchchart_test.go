package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 9 item 5: `sluice bench chart` draws a run's results file as an SVG, and says
// when a peer did not run (scripts/bench.sh with PEERS=0).
func TestBenchChartWritesTheRunsPicture(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.txt")
	require.NoError(t, os.WriteFile(in, []byte("CONTEXT date=2026-12-02T06:00:00Z cpus=2 "+
		"loadavg_start=\"9.64 9.63 10.90\"\nload average: 1 2 3\n"+
		"FIGURE system=sluice test=produce_acks1_p1 msgs_per_s=1234 MiB_per_s=1.2 "+
		"ack_latency(P50:4ms P99:9ms) acked=5000 failed=0\n"), 0o644))
	out := filepath.Join(dir, "images", "bench.svg")
	var stdout, stderr strings.Builder
	code := runBench([]string{"chart", "--in", in, "--out", out}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	svg := string(b)
	require.Contains(t, svg, "<svg")
	require.Contains(t, svg, "1,234 msgs/s")
	require.Contains(t, svg, "load average 9.64 9.63 10.90")
	require.Contains(t, svg, "NATS JetStream: did not run")
	require.Contains(t, svg, "Redis Streams: did not run")
	_, err = os.Stat(out + ".tmp")
	require.True(t, os.IsNotExist(err), "no temporary file is left")
}

func TestBenchChartRefusesAnEmptyRunAndKeepsThePicture(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.txt")
	require.NoError(t, os.WriteFile(in, []byte("sluice bench: not built yet\n"), 0o644))
	out := filepath.Join(dir, "bench.svg")
	require.NoError(t, os.WriteFile(out, []byte("previous"), 0o644))
	var stdout, stderr strings.Builder
	code := runBench([]string{"chart", "--in", in, "--out", out}, nil, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "no FIGURE line")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, "previous", string(b))

	code = runBench([]string{"chart", "--out", out}, nil, &stdout, &stderr)
	require.Equal(t, 2, code)
	require.Contains(t, stderr.String(), "want --in")
}
