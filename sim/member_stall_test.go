package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/probe"
)

// syncStallSets: three members of one group, each stalling before SyncGroup on about
// a third of the generations it joins.
var syncStallSets = [][2]string{{"members", "3"}, {"member.syncstall.chance", "0.3"}}

func probeID(t *testing.T, name string) probe.ID {
	t.Helper()
	for id, n := range probe.Names() {
		if n == name {
			return probe.ID(id)
		}
	}
	t.Fatalf("no probe %s", name)
	return 0
}

// TestSyncStallReachesTheSyncTimeout: members that stall between JoinGroup and SyncGroup
// past the rebalance timeout make the coordinator drop them at its sync timeout (probe
// group/sync-timeout-drops-members) on some seed; the dropped member's SyncGroup is
// refused and it rejoins, and every seed passes its checkers and settles.
func TestSyncStallReachesTheSyncTimeout(t *testing.T) {
	to := uint64(20)
	timeout := probeID(t, "group/sync-timeout-drops-members")
	var stalls, refused int
	var hits uint64
	RunSeedsWith(1, to, 2, syncStallSets, 0, Options{Coverage: true}, func(r SeedRun) {
		require.NoError(t, r.Err)
		if !r.Result.Pass {
			t.Errorf("%s\n  %s\n  reproduce: %s", r.Result.Line(),
				strings.Join(r.Result.Summary(), "\n  "), reproduce(r, syncStallSets))
		}
		stalls += r.Result.Stats.Faults["member-sync-stall"]
		refused += r.Result.Stats.Codes["sync-group:UNKNOWN_MEMBER_ID"] +
			r.Result.Stats.Codes["sync-group:ILLEGAL_GENERATION"]
		hits += r.Coverage.Probes.Count(timeout)
	})
	t.Logf("seeds 1..%d: %d sync stalls, %d sync timeouts, %d syncs refused", to, stalls,
		hits, refused)
	require.Positive(t, stalls, "no member stalled before SyncGroup")
	require.Positive(t, hits, "no stall outlasted the coordinator's sync timeout")
	require.Positive(t, refused, "no stalled member's SyncGroup was refused")
}
