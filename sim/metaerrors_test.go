package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestMetaErrorsFireAndAreSurvived runs seeds where every metadata proposal fails during
// frequent spells (topic creation, admin changes, producer id blocks). The faults must
// fire, and every seed must still pass: clients retry the errors, a failed proposal
// leaves no trace and no producer id is handed out twice. One node, where the answers
// below were pinned (with the drawn node counts, no InitProducerId of seeds 1..12 was
// answered COORDINATOR_NOT_AVAILABLE).
func TestMetaErrorsFireAndAreSurvived(t *testing.T) {
	sets := [][2]string{{"nodes", "1"}, {"faults", "off"}, {"faults.metaerrors", "on"},
		{"faults.metaerrors.every.ms", "5"}, {"faults.metaerrors.for.ms", "300"},
		{"admin", "on"}, {"producer.idempotent", "true"}, {"committers", "2"}}
	seeds := seedRange(1, 12)
	if testing.Short() {
		seeds = seedRange(1, 4)
	}
	fired, seedsFired := 0, 0
	codes := map[string]int{}
	for _, r := range runParallel(t, seeds, sets) {
		for k, v := range r.Result.Stats.Codes {
			codes[k] += v
		}
		require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
			strings.Join(r.Result.Summary(), "\n  "), reproduce(r, sets))
		n := r.Result.Stats.Faults["meta-error"]
		fired += n
		if n > 0 {
			seedsFired++
		}
	}
	t.Logf("%d failed proposals over %d of %d seeds", fired, seedsFired, len(seeds))
	require.GreaterOrEqual(t, seedsFired*2, len(seeds), "the fault fired on too few seeds")
	// The failures reached the clients as the retriable answers a failed commit gets.
	require.Positive(t, codes["create-topics:"+errName(kerr.RequestTimedOut.Code)], codes)
	require.Positive(t, codes["init-producer-id:"+errName(kerr.CoordinatorNotAvailable.Code)],
		codes)
}

func TestMetaErrorsSettingAndSummary(t *testing.T) {
	cfg := Draw(1)
	require.NoError(t, cfg.Set("faults.metaerrors", "on"))
	require.True(t, cfg.Faults.MetaErrors.On)
	require.Contains(t, strings.Join(cfg.Summary(), "\n"), "metaerrors=every~")
	require.NoError(t, cfg.Set("faults", "off"))
	require.False(t, cfg.Faults.MetaErrors.On)
	require.Contains(t, strings.Join(cfg.Summary(), "\n"), "metaerrors=off")
}

// TestUncommittedTopicInImageIsCaught is the check's own test: when the broker hears
// that a failed proposal committed (so its image holds a record the log lacks), the
// metadata it reports must be flagged.
func TestUncommittedTopicInImageIsCaught(t *testing.T) {
	sets := [][2]string{{"faults", "off"}, {"faults.metaerrors", "on"},
		{"faults.metaerrors.every.ms", "5"}, {"faults.metaerrors.for.ms", "300"}}
	caught := 0
	for seed := uint64(1); seed <= 6; seed++ {
		cfg := Draw(seed)
		for _, kv := range sets {
			require.NoError(t, cfg.Set(kv[0], kv[1]))
		}
		cfg.Faults.MetaErrorChance = 1
		w, err := New(cfg, Options{})
		require.NoError(t, err)
		w.meta.claimCommitted = true
		res := w.Run()
		for _, f := range res.Failures {
			if f.Kind == "anomaly" && strings.Contains(f.Detail, "metadata reports") {
				caught++
				break
			}
		}
	}
	require.GreaterOrEqual(t, caught, 4, "uncommitted topics in the image went unnoticed")
}

// TestMetaUnknownFiresAndIsSurvived runs seeds where a third of the metadata proposals
// are answered "outcome unknown", half of which commit after the answer. Every seed
// must pass: clients retry the retriable answers, and a record that commits late is
// applied like any other (a topic created after all, a producer id block skipped).
func TestMetaUnknownFiresAndIsSurvived(t *testing.T) {
	sets := [][2]string{{"faults", "off"}, {"faults.metaunknown", "0.3"},
		{"admin", "on"}, {"producer.idempotent", "true"}, {"deletes", "on"}}
	seeds := seedRange(1, 8)
	if testing.Short() {
		seeds = seedRange(1, 3)
	}
	unknown, late := 0, 0
	for _, r := range runParallel(t, seeds, sets) {
		require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
			strings.Join(r.Result.Summary(), "\n  "), reproduce(r, sets))
		unknown += r.Result.Stats.Faults["meta-unknown"]
		late += r.Result.Stats.Faults["meta-unknown-committed"]
	}
	t.Logf("%d unknown outcomes, %d of them committed after the answer", unknown, late)
	require.Positive(t, late, "no unknown outcome committed late")
	require.Greater(t, unknown, late, "no unknown outcome was lost")
}
