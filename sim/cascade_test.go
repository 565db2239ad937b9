package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/mutant"
)

// cascadeSets runs three nodes with the cascade fault often and no other fault, so its
// two failovers are the only ones.
var cascadeSets = [][2]string{{"nodes", "3"}, {"faults", "off"}, {"faults.cascade", "on"},
	{"faults.cascade.every.ms", "1500"}}

// cascadeSeeds fail with replica/keeps-recovered-hwm under cascadeSets (when written, 9
// of seeds 1..20 did: 4 5 6 9 14 15 17 18 20; every one of the 20 passed without it).
// Re-derived after session 12's merges moved three-node traces (4 5 6 no longer caught
// it): 1 3 7 9 14 15 17 18 of 1..20 fail with it, and 1 3 7 pass without it.
var cascadeSeeds = []uint64{1, 3, 7}

// TestCascadeFailsOverToARestartedReplica: with the cascade fault on, a partition's
// leader is killed while a follower's fetcher is stuck and, once it is back in the ISR,
// so is the leader elected after it: the restarted replica leads again with a lagging
// ISR member. The seeds pass (no read shows a high-water mark an ISR member's log does
// not reach), the sequence runs to its end (cascade-rejoined), and the timeline shades
// the stuck fetcher and marks the cascade.
func TestCascadeFailsOverToARestartedReplica(t *testing.T) {
	rejoined := 0
	for i, r := range runParallel(t, cascadeSeeds, cascadeSets) {
		require.True(t, r.Result.Pass, "seed %d: %s", cascadeSeeds[i],
			strings.Join(r.Result.Summary(), "\n  "))
		require.Positive(t, r.Result.Stats.Faults["cascade"], "seed %d", cascadeSeeds[i])
		rejoined += r.Result.Stats.Faults["cascade-rejoined"]
	}
	require.Positive(t, rejoined, "no cascade reached its second failover")
	run := RunOne(cascadeSeeds[0], cascadeSets, 0, Options{Timeline: true})
	require.NoError(t, run.Err)
	path, err := run.WriteTimeline(t.TempDir(), nil)
	require.NoError(t, err)
	p := readTimeline(t, path)
	spans, marks := 0, 0
	for _, s := range p.Spans {
		if s.Kind == "cascade" && p.Lanes[s.Lane].Kind == "node" {
			spans++
		}
	}
	for _, m := range p.Marks {
		if m.Kind == "cascade" {
			marks++
		}
	}
	require.Positive(t, spans, "the stuck fetcher's node lane is shaded")
	require.Positive(t, marks, "the cascade is marked")
}

// TestCascadeCatchesKeepsRecoveredHWM runs only in the sluice_mutants build (from
// TestReplicaMutantBuild): a replica that keeps its recovered log end as its high-water
// mark, elected by the cascade with a lagging ISR member, shows readers a mark that
// member's log does not reach (read-uncommitted) on at least two of cascadeSeeds.
func TestCascadeCatchesKeepsRecoveredHWM(t *testing.T) {
	if !mutantReplicaBuild {
		t.Skip("runs in the sluice_mutants build (TestReplicaMutantBuild)")
	}
	defer func() { mutant.Name = "" }()
	setReplicaMutant("keeps-recovered-hwm") // before any world runs; read-only while they run
	caught := 0
	for _, r := range runParallel(t, cascadeSeeds, cascadeSets) {
		if r.Result.Has(ReadUncommitted) {
			caught++
		}
	}
	t.Logf("mutant keeps-recovered-hwm: %s on %d of %d seeds", ReadUncommitted, caught,
		len(cascadeSeeds))
	require.GreaterOrEqual(t, caught, 2)
}
