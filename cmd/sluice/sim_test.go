package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func simRun(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"sim"}, args...), nil, &out, &errb)
	return code, out.String() + errb.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestSimOneSeedPasses(t *testing.T) {
	code, out := simRun(t, "--seed", "3")
	require.Equal(t, 0, code, out)
	last := lastLine(out)
	require.Contains(t, last, "PASS")
	require.Contains(t, last, "seed=3")
	require.Regexp(t, `trace=[0-9a-f]{16}`, last)

	_, again := simRun(t, "--seed", "3")
	require.Equal(t, strings.Fields(last)[2], strings.Fields(lastLine(again))[2],
		"the same seed gives the same trace")
}

func TestSimFailureReproducesAndWritesArtifacts(t *testing.T) {
	dir := t.TempDir()
	// Acknowledging without fsync loses writes in a crash of the one node on most seeds
	// (on a cluster the replicas keep most): take the first.
	var code int
	var out, seed string
	for s := 1; s <= 10 && code != 1; s++ {
		seed = strconv.Itoa(s)
		code, out = simRun(t, "--seed", seed, "--set", "nodes=1", "--set", "log.flush.policy=never",
			"--set", "faults.crash=on", "--out", dir)
	}
	require.Equal(t, 1, code, out)
	require.Contains(t, lastLine(out), "FAIL")
	require.Contains(t, lastLine(out), "seed="+seed+" ")
	require.Contains(t, out, "lost-write")
	require.Contains(t, out, "reproduce (commit ")
	require.Contains(t, out,
		"sluice sim --seed "+seed+" --set nodes=1 --set log.flush.policy=never "+
			"--set faults.crash=on")
	folder := filepath.Join(dir, "seed-"+seed)
	for _, f := range []string{"summary.txt", "events.log", "history.txt", "history.json",
		"log-tail.txt", "pending.txt", "timeline.html"} {
		st, err := os.Stat(filepath.Join(folder, f))
		require.NoError(t, err)
		if f != "log-tail.txt" {
			require.Greater(t, st.Size(), int64(0), f)
		}
	}
	pending, err := os.ReadFile(filepath.Join(folder, "pending.txt"))
	require.NoError(t, err)
	require.Contains(t, string(pending), "pending work at the first failure")
	require.Contains(t, string(pending), "node 1 (incarnation ")
	html, err := filepath.Glob(filepath.Join(folder, "porcupine-*.html"))
	require.NoError(t, err)
	require.NotEmpty(t, html)

	// The printed command replays the failure: same trace.
	_, again := simRun(t, "--seed", seed, "--set", "nodes=1", "--set", "log.flush.policy=never",
		"--set", "faults.crash=on", "--out", t.TempDir())
	require.Equal(t, strings.Fields(lastLine(out))[2], strings.Fields(lastLine(again))[2])
}

// TestSimHTMLWritesTimelineForAPassingSeed: --html writes timeline.html for a passing
// seed, and the trace is the one the seed has without it.
func TestSimHTMLWritesTimelineForAPassingSeed(t *testing.T) {
	dir := t.TempDir()
	code, out := simRun(t, "--seed", "3", "--html", "--out", dir)
	require.Equal(t, 0, code, out)
	path := filepath.Join(dir, "seed-3", "timeline.html")
	require.Contains(t, out, "timeline: "+path+"\n")
	page, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(page), "<title>Sluice simulator timeline, seed 3</title>")
	require.Contains(t, string(page), `"name":"node0"`)
	_, plain := simRun(t, "--seed", "3")
	require.Equal(t, strings.Fields(lastLine(plain))[2], strings.Fields(lastLine(out))[2],
		"--html changes nothing in the run")

	code, out = simRun(t, "--seeds", "1..2", "--html")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "--html takes one --seed")
}

func TestSimRangeListsFailingSeeds(t *testing.T) {
	code, out := simRun(t, "--seeds", "1..4", "--workers", "2", "--out", t.TempDir(),
		"--set", "log.flush.policy=never", "--set", "faults.crash=on")
	require.Equal(t, 1, code, out)
	require.Regexp(t, `FAIL seeds=1\.\.4 failed=\d+: `, lastLine(out))

	code, out = simRun(t, "--seeds", "5..6")
	require.Equal(t, 0, code, out)
	require.Equal(t, "PASS seeds=5..6", lastLine(out))
}

func TestSimRejectsBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"--seeds", "9..3"}, {"--seeds", "x"}, {"--set", "nonsense"},
		{"--set", "no.such.setting=1", "--seed", "1"}, {"extra"},
	} {
		code, out := simRun(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, out)
	}
}

func TestSimCoverageReport(t *testing.T) {
	code, out := simRun(t, "--seeds", "3..4", "--workers", "2", "--coverage",
		"--set", "audit=on")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "coverage over 2 seeds")
	require.Contains(t, out, "(API, error code) pairs answered:")
	require.Contains(t, out, "Produce NONE")
	require.Contains(t, out, "probes hit:")
	require.Contains(t, out, "never hit:")
	require.Contains(t, lastLine(out), "PASS seeds=3..4")
}
