package sim

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// vandalSets puts one vandal on every seed.
var vandalSets = [][2]string{{"vandals", "1"}}

func vandalSeeds(t *testing.T) []uint64 {
	if testing.Short() {
		return seedRange(1, 10)
	}
	return seedRange(1, 30)
}

// TestValidationMutantsAreCaught runs only in the deliberately broken build (build tag
// sluice_mutants, batch/ mutants in core/mutant): each way of breaking the
// record walk must fail at least 20% of the seeds with a vandal, as an anomaly (the
// vandal's batch accepted, or a reader's strict decode failing on it).
func TestValidationMutantsAreCaught(t *testing.T) {
	if !mutantValidationBuild {
		t.Skip("runs in the sluice_mutants build (TestValidationMutantBuild)")
	}
	defer setValidationMutant("trailing-ok")
	for _, mutant := range []string{"trailing-ok", "delta-unchecked", "count-trusted"} {
		setValidationMutant(mutant) // before any world runs; read-only while they run
		caught := 0
		seeds := vandalSeeds(t)
		for _, r := range runParallel(t, seeds, vandalSets) {
			if r.Result.Has("malformed-accepted") || r.Result.Has("undecodable-batch") {
				caught++
			}
		}
		t.Logf("mutant %s: caught on %d of %d seeds", mutant, caught, len(seeds))
		require.GreaterOrEqual(t, caught*5, len(seeds), "%s: fewer than 20%% of seeds "+
			"caught it", mutant)
	}
}

// TestVandalBatchesAreRefused: the same seeds pass with the real validator, and the
// vandal's batches were refused on every seed that sent some.
func TestVandalBatchesAreRefused(t *testing.T) {
	if mutantValidationBuild {
		t.Skip("the mutant build accepts some")
	}
	// Without disk loss: seed 11 draws five nodes, and with the vandal its disk losses
	// split group cg1 (two generation-1 plans), the known five-node lost-disk class
	// (docs/simulation.md, "Five-node seeds"), not the validator.
	sets := append([][2]string{{"faults.diskloss", "off"}}, vandalSets...)
	refused := 0
	for _, r := range runParallel(t, vandalSeeds(t), sets) {
		require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
			strings.Join(r.Result.Summary(), "\n  "), reproduce(r, sets))
		refused += r.Result.Stats.Codes["produce:"+errName(87)] +
			r.Result.Stats.Codes["produce:"+errName(2)]
	}
	require.Positive(t, refused, "no vandal batch was refused: the vandal sent nothing")
}

// TestValidationMutantBuild builds the sim tests with the mutant tag and runs
// TestValidationMutantsAreCaught there.
func TestValidationMutantBuild(t *testing.T) {
	if testing.Short() || mutantValidationBuild {
		t.Skip("builds the package a second time")
	}
	out, err := exec.Command("go", "test", "-count=1", "-tags",
		"invariants,sluice_mutants", "-run",
		"^TestValidationMutantsAreCaught$", "-v", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "mutant count-trusted: caught on", "%s", out)
	require.NotContains(t, string(out), "SKIP", "%s", out)
}
