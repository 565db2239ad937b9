package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// kafkajs is the Node.js client the issue names. It stays on old, non-flexible
// versions (Produce ≤ 7, Fetch ≤ 11, Metadata ≤ 6). The script and its pinned
// package-lock.json live in testdata/kafkajs; node_modules is installed per run into
// a temporary copy (npm's own cache keeps that quick) and never committed.

// nodeTools finds node and npm. The machine image has both; a developer machine
// without them skips, CI fails instead so the test cannot silently stop running.
func nodeTools(t *testing.T) (node, npm string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node and npm are needed for the kafkajs test but are not on PATH")
		}
		t.Skip("node/npm not installed: the kafkajs compatibility test needs Node.js ≥ 14 and npm")
	}
	return node, npm
}

// kafkajsSummary is the JSON line script.js prints.
type kafkajsSummary struct {
	Produced     int            `json:"produced"`
	Consumed     int            `json:"consumed"`
	Check        map[string]int `json:"check"`
	Committed    int            `json:"committed"`
	Resumed      int            `json:"resumed"`
	ResumedCheck map[string]int `json:"resumedCheck"`
	ResumedBelow int            `json:"resumedBelowCommit"`
	CommitAfter  int            `json:"committedAfter"`
}

func TestKafkaJSProducesAndGroupConsumesAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes and installs an npm package")
	}
	nodeBin, npmBin := nodeTools(t)
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "script.js"} {
		b, err := os.ReadFile(filepath.Join("testdata", "kafkajs", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o600))
	}
	install := exec.CommandContext(ctx(t, 120*time.Second), npmBin, "ci", "--no-audit", "--no-fund",
		"--ignore-scripts", "--loglevel=error")
	install.Dir = dir
	start := time.Now()
	out, err := install.CombinedOutput()
	require.NoError(t, err, "npm ci (needs the npm registry or a warm npm cache):\n%s", out)
	t.Logf("npm ci took %v", time.Since(start).Round(time.Millisecond))

	n := groupNode(t)
	const count = 2000
	run := exec.CommandContext(ctx(t, 40*time.Second), nodeBin, "script.js", n.addr, strconv.Itoa(count))
	run.Dir = dir
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	start = time.Now()
	require.NoError(t, run.Run(), "kafkajs script:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())

	t.Logf("kafkajs script took %v", time.Since(start).Round(time.Millisecond))
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var s kafkajsSummary
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &s), "summary line in:\n%s", stdout.String())
	noProblems := map[string]int{"offsetGaps": 0, "keyMoved": 0, "outOfOrder": 0, "duplicates": 0}
	require.Equal(t, count+50, s.Produced)
	require.Equal(t, count, s.Consumed, "the group read everything produced")
	require.Equal(t, noProblems, s.Check, "first group session: dense offsets, keys in order, once each")
	require.Equal(t, count, s.Committed, "the group's committed offsets cover every record read")
	require.Equal(t, 50, s.Resumed)
	require.Equal(t, noProblems, s.ResumedCheck)
	require.Zero(t, s.ResumedBelow, "the second consumer started at the committed offsets")
	require.Equal(t, count+50, s.CommitAfter)
}
