package sim

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// groupSets turns consumer groups on for every seed: members are copies of the first
// drawn (or a default one), so all of them share one group.
var groupSets = [][2]string{{"members", "3"}}

// staleCommitSeeds is how many seeds the stale-commit tests run.
func staleCommitSeeds(t *testing.T) []uint64 {
	if testing.Short() {
		return seedRange(1, 10)
	}
	return seedRange(1, 30)
}

// TestStaleCommitMutantIsCaught runs only in the deliberately broken build (build tag
// sluice_mutant_stale_commit: the coordinator accepts commits from older generations of
// a known member); elsewhere it checks that the build it runs in refuses them.
func TestStaleCommitMutantIsCaught(t *testing.T) {
	if !mutantStaleCommitBuild {
		t.Skip("runs in the sluice_mutant_stale_commit build (TestStaleCommitMutantBuild)")
	}
	caught := 0
	seeds := staleCommitSeeds(t)
	for _, r := range runParallel(t, seeds, groupSets) {
		if r.Result.Has("stale-commit-accepted") {
			caught++
		}
	}
	t.Logf("stale commits accepted on %d of %d seeds", caught, len(seeds))
	require.GreaterOrEqual(t, caught*5, len(seeds), "fewer than 20%% of seeds caught it")
}

// TestStaleCommitsAreRefused: the same seeds pass with the real coordinator, and they
// did try commits from older generations (which it refused).
func TestStaleCommitsAreRefused(t *testing.T) {
	if mutantStaleCommitBuild {
		t.Skip("the mutant build accepts them")
	}
	refused := 0
	for _, r := range runParallel(t, staleCommitSeeds(t), groupSets) {
		require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
			strings.Join(r.Result.Summary(), "\n  "), reproduce(r, groupSets))
		refused += r.Result.Stats.Codes["member-offset-commit:ILLEGAL_GENERATION"]
	}
	require.Positive(t, refused, "no commit of an older generation was ever tried")
}

// TestStaleCommitMutantBuild builds the sim tests with the mutant tag and runs
// TestStaleCommitMutantIsCaught there, so every full test run proves the group checks
// can fail.
func TestStaleCommitMutantBuild(t *testing.T) {
	if testing.Short() || mutantStaleCommitBuild {
		t.Skip("builds the package a second time")
	}
	out, err := exec.Command("go", "test", "-count=1", "-tags",
		"invariants,sluice_mutant_stale_commit", "-run", "^TestStaleCommitMutantIsCaught$",
		"-v", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "stale commits accepted on", "%s", out)
	require.NotContains(t, string(out), "SKIP", "%s", out)
}
