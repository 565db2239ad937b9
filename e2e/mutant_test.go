package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSimulatorCatchesAckBeforeFsyncBuild builds the deliberately broken broker (build
// tag sluice_mutants, run with SLUICE_MUTANT=broker/ack-before-fsync: acks=all answered
// before the fsync), runs seeds with crashes on, and requires that the simulator fails
// some of them and that the reproduction command it prints replays the failure with the same trace hash.
func TestSimulatorCatchesAckBeforeFsyncBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second binary and runs simulations")
	}
	touchSources()
	bin := filepath.Join(t.TempDir(), "sluice-mutant")
	out, err := exec.Command("go", "build", "-tags", "sluice_mutants", "-o", bin,
		"../cmd/sluice").CombinedOutput()
	require.NoError(t, err, "%s", out)
	work := t.TempDir() // the simulator writes failure artifacts under its working dir

	run := func(args ...string) (string, int) {
		cmd := exec.CommandContext(ctx(t, 4*time.Minute), bin, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "SLUICE_MUTANT=broker/ack-before-fsync")
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return buf.String(), code
	}
	text, code := run("sim", "--seeds", "1..8", "--set", "faults.crash=on")
	require.Equal(t, 1, code, "the broken build passed every seed:\n%s", text)
	repro := regexp.MustCompile(`reproduce \(commit [^)]*\): sluice (sim --seed (\d+)[^\n]*)`).
		FindStringSubmatch(text)
	require.NotNil(t, repro, "no reproduction command printed:\n%s", text)
	failLine := regexp.MustCompile(`FAIL seed=` + repro[2] + ` trace=([0-9a-f]+)`).FindStringSubmatch(text)
	require.NotNil(t, failLine, "no FAIL line for seed %s", repro[2])
	require.Contains(t, failLine[0], "FAIL")

	for i := 0; i < 2; i++ {
		again, code := run(strings.Fields(repro[1])...)
		require.Equal(t, 1, code, "the reproduction passed:\n%s", again)
		lines := strings.Split(strings.TrimSpace(again), "\n")
		last := lines[len(lines)-1]
		require.Contains(t, last, "FAIL")
		require.Contains(t, last, "seed="+repro[2])
		require.Contains(t, last, "trace="+failLine[1], "the replay took another path")
	}
}
