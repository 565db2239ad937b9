package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// deleteSets force topic deletions on every topic (no committers or groups), often, on
// one node (a cluster drops the deleter: cluster.go clusterClients).
var deleteSets = [][2]string{{"nodes", "1"}, {"deletes", "on"}, {"deletes.every.ms", "500"},
	{"members", "0"}, {"committers", "0"}}

// TestTopicDeletesAreSurvived runs seeds that delete and re-create topics under load
// and faults: deletions must happen, clients must meet UNKNOWN_TOPIC_OR_PARTITION, and
// every incarnation must check clean (its own offsets from 0, no record of an older
// incarnation, no acknowledged write lost).
func TestTopicDeletesAreSurvived(t *testing.T) {
	seeds := seedRange(1, 16)
	if testing.Short() {
		seeds = seedRange(1, 4)
	}
	deleted := 0
	codes := map[string]int{}
	for _, r := range runParallel(t, seeds, deleteSets) {
		for k, v := range r.Result.Stats.Codes {
			codes[k] += v
		}
		require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
			strings.Join(r.Result.Summary(), "\n  "), reproduce(r, deleteSets))
		deleted += r.Result.Stats.Faults["topic-deleted"]
	}
	require.GreaterOrEqual(t, deleted, len(seeds), "too few topic deletions")
	require.Positive(t, codes["produce:"+errName(kerr.UnknownTopicOrPartition.Code)], codes)
	require.Positive(t, codes["fetch:"+errName(kerr.UnknownTopicOrPartition.Code)], codes)
}

// TestDeletedDataInNewIncarnationIsCaught is the check's own test: a broker whose
// topic deletion leaves the partition logs behind serves the old records as the
// re-created topic's, which the per-incarnation checks must flag.
func TestDeletedDataInNewIncarnationIsCaught(t *testing.T) {
	caught := 0
	for seed := uint64(1); seed <= 6; seed++ {
		cfg := Draw(seed)
		for _, kv := range append([][2]string{{"faults", "off"}}, deleteSets...) {
			require.NoError(t, cfg.Set(kv[0], kv[1]))
		}
		w, err := New(cfg, Options{})
		require.NoError(t, err)
		w.mutantKeepLogs = true
		if res := w.Run(); !res.Pass {
			caught++
		}
	}
	require.GreaterOrEqual(t, caught, 4, "old data in a re-created topic went unnoticed")
}
