package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMetaErrorsFireAndAreSurvived runs seeds where every metadata proposal fails during
// frequent spells (topic creation, admin changes, producer id blocks). The faults must
// fire, and every seed must still pass: clients retry the errors, a failed proposal
// leaves no trace and no producer id is handed out twice.
func TestMetaErrorsFireAndAreSurvived(t *testing.T) {
	sets := [][2]string{{"faults", "off"}, {"faults.metaerrors", "on"},
		{"faults.metaerrors.every.ms", "200"}, {"faults.metaerrors.for.ms", "400"},
		{"admin", "on"}, {"producer.idempotent", "true"}}
	seeds := seedRange(1, 12)
	if testing.Short() {
		seeds = seedRange(1, 4)
	}
	fired, seedsFired := 0, 0
	for _, r := range runParallel(t, seeds, sets) {
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
