package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestReadErrorsFireAndAreSurvived runs seeds with frequent read-error spells and
// process restarts (whose recovery then reads through the faults too). The faults must
// fire and reach clients as KAFKA_STORAGE_ERROR, and every seed must pass: no fetch
// serves wrong data, recovery never truncates because a read failed, the group
// coordinator never serves offsets from a partly replayed partition, and the heal's
// restart brings every partition back.
func TestReadErrorsFireAndAreSurvived(t *testing.T) {
	sets := [][2]string{{"faults", "off"}, {"faults.readerrors", "on"},
		{"faults.readerrors.every.ms", "200"}, {"faults.readerrors.for.ms", "500"},
		{"faults.restart", "on"}, {"committers", "2"}, {"members", "2"}}
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
		n := r.Result.Stats.Faults["disk-error-read"] + r.Result.Stats.Faults["disk-error-readdir"]
		fired += n
		if n > 0 {
			seedsFired++
		}
	}
	t.Logf("%d failed reads over %d of %d seeds", fired, seedsFired, len(seeds))
	require.GreaterOrEqual(t, seedsFired*2, len(seeds), "the fault fired on too few seeds")
	require.Positive(t, codes["fetch:"+errName(kerr.KafkaStorageError.Code)], codes)
}
