package sim

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The compaction workload is drawn on about 30% of seeds, from the seed alone, and
// compaction=off|on switches it.
func TestCompactionIsDrawnOnAboutAThirdOfSeeds(t *testing.T) {
	on := 0
	for seed := uint64(1); seed <= 1000; seed++ {
		c := Draw(seed)
		require.Equal(t, c.Compact, Draw(seed).Compact, "seed %d draws the same", seed)
		if c.Compact.On {
			on++
			require.NotEmpty(t, c.Broker["log.cleaner.backoff.ms"])
		}
	}
	require.InDelta(t, 300, on, 60, "seeds with the compaction workload")
	c := Draw(4)
	require.NoError(t, c.Set("compaction", "off"))
	require.False(t, c.Compact.On)
	require.NoError(t, c.Set("compaction", "on"))
	require.True(t, c.Compact.On)
	require.Error(t, c.Set("compaction", "maybe"))
}

// With the workload on, the cleaner must really run on the compacted topic (segments
// swapped in, records removed), the reader's reads from the log start get checked, and
// the seeds pass: with one node and with three.
func TestCompactionCleansAndPasses(t *testing.T) {
	for _, sets := range [][][2]string{{{"compaction", "on"}},
		{{"compaction", "on"}, {"nodes", "3"}}} {
		seeds := seedRange(1, 10)
		cleaned := 0
		for _, r := range runParallel(t, seeds, sets) {
			require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
				strings.Join(r.Result.Summary(), "\n  "), reproduce(r, sets))
			st := r.Result.Stats.Compact
			require.Positive(t, st.Acked, "seed %d %v", r.Result.Seed, sets)
			require.Positive(t, st.Checked, "seed %d %v: no read was checked", r.Result.Seed, sets)
			if st.Segments > 0 && st.RecordsRemoved > 0 {
				cleaned++
			}
		}
		t.Logf("%v: the cleaner swapped segments in on %d of %d seeds", sets, cleaned,
			len(seeds))
		require.GreaterOrEqual(t, cleaned*2, len(seeds), "%v: the cleaner ran on fewer "+
			"than half the seeds", sets)
	}
}

// diskMutants are the compaction mutants (disk/compact*.go) and the anomaly the
// compaction checker must report for each.
var diskMutants = []struct{ mutant, anomaly string }{
	// The last value of every key in a cleaned segment goes.
	{"clean-drops-last-value", "compaction-latest-lost"},
	// The active segment is cleaned too: records younger than min.compaction.lag.ms
	// that a newer one superseded go.
	{"clean-active-segment", "compaction-lag"},
}

// TestCompactionMutantsAreCaught runs only in the deliberately broken build (build tag
// sluice_mutants): each compaction mutant must be reported, as its own anomaly, on some
// of seeds 1..12 with the workload on.
func TestCompactionMutantsAreCaught(t *testing.T) {
	if !mutantDiskBuild {
		t.Skip("runs in the sluice_mutants build (TestCompactionMutantBuild)")
	}
	defer setDiskMutant("")
	// One node, where the seeds below were chosen (a cluster's replicas change which
	// segments the checks read).
	sets := [][2]string{{"nodes", "1"}, {"compaction", "on"}}
	for _, c := range diskMutants {
		setDiskMutant(c.mutant) // before any world runs; read-only while they run
		seeds := seedRange(1, 12)
		caught := 0
		for _, r := range runParallel(t, seeds, sets) {
			if r.Result.Has(c.anomaly) {
				caught++
			}
		}
		t.Logf("mutant %s: %s on %d of %d seeds", c.mutant, c.anomaly, caught, len(seeds))
		require.GreaterOrEqual(t, caught*4, len(seeds), "%s: fewer than 25%% of seeds "+
			"caught it", c.mutant)
	}
}

// TestCompactionMutantBuild builds the sim tests with the mutant tag and runs
// TestCompactionMutantsAreCaught there, so every full test run proves the checks can
// fail.
func TestCompactionMutantBuild(t *testing.T) {
	if testing.Short() || mutantDiskBuild {
		t.Skip("builds the package a second time")
	}
	out, err := exec.Command("go", "test", "-count=1", "-tags",
		"invariants,sluice_mutants", "-run", "^TestCompactionMutantsAreCaught$",
		"-v", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "mutant clean-drops-last-value: compaction-latest-lost on",
		"%s", out)
	require.NotContains(t, string(out), "SKIP", "%s", out)
}
