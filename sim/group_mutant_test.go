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

// groupMutantSeeds is how many seeds the group mutant tests run.
func groupMutantSeeds(t *testing.T) []uint64 {
	if testing.Short() {
		return seedRange(1, 10)
	}
	return seedRange(1, 30)
}

// TestGroupMutantsAreCaught runs only in the deliberately broken build (build tag
// sluice_mutants, group/ mutants in core/mutant): each way of breaking the
// coordinator must be reported, as its own anomaly, on at least 20% of the seeds.
func TestGroupMutantsAreCaught(t *testing.T) {
	if !mutantGroupBuild {
		t.Skip("runs in the sluice_mutants build (TestGroupMutantBuild)")
	}
	defer setGroupMutant("stale-commit")
	for _, c := range []struct{ mutant, anomaly string }{
		{"stale-commit", "stale-commit-accepted"},
		{"no-generation-bump", "split-brain"},
	} {
		setGroupMutant(c.mutant) // before any world runs; read-only while they run
		caught := 0
		seeds := groupMutantSeeds(t)
		for _, r := range runParallel(t, seeds, groupSets) {
			if r.Result.Has(c.anomaly) {
				caught++
			}
		}
		t.Logf("mutant %s: %s on %d of %d seeds", c.mutant, c.anomaly, caught, len(seeds))
		require.GreaterOrEqual(t, caught*5, len(seeds), "%s: fewer than 20%% of seeds "+
			"caught it", c.mutant)
	}
}

// TestStaleCommitsAreRefused: the same seeds pass with the real coordinator, and they
// did try commits from older generations (which it refused).
func TestStaleCommitsAreRefused(t *testing.T) {
	if mutantGroupBuild {
		t.Skip("the mutant build accepts them")
	}
	refused := 0
	for _, r := range runParallel(t, groupMutantSeeds(t), groupSets) {
		require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
			strings.Join(r.Result.Summary(), "\n  "), reproduce(r, groupSets))
		refused += r.Result.Stats.Codes["member-offset-commit:ILLEGAL_GENERATION"]
	}
	require.Positive(t, refused, "no commit of an older generation was ever tried")
}

// TestGroupMutantBuild builds the sim tests with the mutant tag and runs
// TestGroupMutantsAreCaught there, so every full test run proves the group checks can
// fail.
func TestGroupMutantBuild(t *testing.T) {
	if testing.Short() || mutantGroupBuild {
		t.Skip("builds the package a second time")
	}
	out, err := exec.Command("go", "test", "-count=1", "-tags",
		"invariants,sluice_mutants", "-run", "^TestGroupMutantsAreCaught$",
		"-v", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "mutant no-generation-bump: split-brain on", "%s", out)
	require.NotContains(t, string(out), "SKIP", "%s", out)
}
