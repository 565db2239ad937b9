package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadersWithFetchSessions runs seeds whose readers all fetch through incremental
// fetch sessions (KIP-227), with the default faults: every seed passes, including the
// fetch-session-starved check, and the sessions were used.
func TestReadersWithFetchSessions(t *testing.T) {
	sets := [][2]string{{"readers", "3"}, {"readers.sessions", "true"}}
	seeds := seedRange(1, 16)
	if testing.Short() {
		seeds = seedRange(1, 4)
	}
	incremental := 0
	for _, r := range runParallel(t, seeds, sets) {
		require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
			strings.Join(r.Result.Summary(), "\n  "), reproduce(r, sets))
		incremental += r.Result.Stats.SessionFetches
	}
	t.Logf("%d incremental session fetches over %d seeds", incremental, len(seeds))
	require.Greater(t, incremental, 100*len(seeds), "the readers hardly used sessions")
}
