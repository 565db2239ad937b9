package sim

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/mutant"
)

// TestTimelineOfAPlantedBug runs only in the deliberately broken build (build tag
// sluice_mutants): with broker/ack-before-fsync planted (acks=all answered before the
// fsync), seed 25 loses acknowledged writes in a crash, and its artifacts' timeline.html
// must show the finding, the operations it names, the crashes and a lane per node and
// client, and link porcupine's view written beside it.
func TestTimelineOfAPlantedBug(t *testing.T) {
	if !mutant.Build {
		t.Skip("runs in the sluice_mutants build (TestTimelineMutantBuild)")
	}
	defer func() { mutant.Name = "" }()
	mutant.Name = "broker/ack-before-fsync" // before any world runs; read-only while they do
	// Seed 25 found it on one node, the default then.
	run := RunOne(25, [][2]string{{"nodes", "1"}}, 0, Options{})
	require.NoError(t, run.Err)
	require.True(t, run.Result.Has("lost-write"), "%s", run.Result.Line())
	requireFindingPage(t, run, "lost-write")
}

// TestTimelineMutantBuild builds the sim tests with the mutant tag and runs
// TestTimelineOfAPlantedBug there.
func TestTimelineMutantBuild(t *testing.T) {
	if testing.Short() || mutant.Build {
		t.Skip("builds the package a second time")
	}
	out, err := exec.Command("go", "test", "-count=1", "-tags",
		"invariants,sluice_mutants", "-run", "^TestTimelineOfAPlantedBug$",
		"-v", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestTimelineOfAPlantedBug", "%s", out)
}
