package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/mutant"
)

// TestReplicationMutantsAreCaught runs only in the deliberately broken build (build tag
// sluice_mutants): a follower serving produces and consumer fetches, and a high-water
// mark that ignores the followers, must fail at least half of the clustered seeds that
// pass without them (clusterSeeds, TestClusteredWorldsPass). With -tags invariants the
// broker's own invariants (B12: a produce accepted off the leader; B13: a high-water
// mark past what an ISR member holds) fire first in the runs the cluster makes; the
// simulator is what drives the brokers there.
func TestReplicationMutantsAreCaught(t *testing.T) {
	if !mutant.Build {
		t.Skip("runs in the sluice_mutants build")
	}
	defer func() { mutant.Name = "" }()
	for _, name := range []string{"broker/follower-serves-clients", "broker/hwm-ignores-isr"} {
		mutant.Name = name // before any world runs; read-only while they run
		caught := 0
		for _, r := range runParallel(t, clusterSeeds, clusterSets) {
			if !r.Result.Pass {
				caught++
			}
		}
		t.Logf("%s: %d of %d seeds failed", name, caught, len(clusterSeeds))
		require.GreaterOrEqual(t, caught, len(clusterSeeds)/2, name)
	}
}
