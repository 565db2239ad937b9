package sim

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core/mutant"
)

// widerSets turns every form of the wider workload (widen.go) on, on one node (a cluster
// drops the zombie and the auditor: cluster.go clusterClients).
var widerSets = [][2]string{{"nodes", "1"}, {"zombie", "on"}, {"audit", "on"},
	{"audit.freshtrim.chance", "0.3"}, {"vandals", "1"}, {"vandal.badcrc.chance", "0.5"},
	{"reader.tiny.chance", "0.3"}}

func widerSeeds(t *testing.T) []uint64 {
	if testing.Short() {
		return seedRange(1, 8)
	}
	return seedRange(1, 20)
}

// widerMutants are the planted bugs only the wider workload reaches, each with the
// failure kinds (Result.Has) that may report it.
var widerMutants = []struct {
	mutant string
	kinds  []string
}{
	// A first batch over the fetch limits is dropped: readers stall on it.
	{"broker/kip74-first-dropped", []string{"liveness"}},
	// The zombie's stale-epoch batch is judged by its sequence, not fenced.
	{"replica/stale-producer-epoch", []string{"zombie-not-fenced", "zombie-accepted"}},
	// A batch with a wrong CRC is accepted.
	{"batch/crc-unchecked", []string{"malformed-accepted"}},
	// DeleteRecords past the high-water mark is accepted: invariant R1 panics.
	{"replica/delete-records-to-end", []string{"panic", "audit"}},
}

// TestWiderWorkloadPasses: with every wider form on, seeds pass with the real broker,
// and each form drew the refusal it is there for.
func TestWiderWorkloadPasses(t *testing.T) {
	if mutant.Build {
		t.Skip("the mutant build fails these seeds on purpose")
	}
	codes := map[string]int{}
	for _, r := range runParallel(t, widerSeeds(t), widerSets) {
		require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
			strings.Join(r.Result.Summary(), "\n  "), reproduce(r, widerSets))
		for k, n := range r.Result.Stats.Codes {
			codes[k] += n
		}
	}
	for _, want := range []string{
		"produce:" + errName(kerr.InvalidProducerEpoch.Code), // zombie batches fenced
		"produce:" + errName(kerr.CorruptMessage.Code),       // bad CRCs refused
		"delete-records:" + errName(kerr.OffsetOutOfRange.Code),
	} {
		require.Positive(t, codes[want], "no %s in %v", want, codes)
	}
}

// TestWiderMutantsAreCaught runs only in the deliberately broken build (build tag
// sluice_mutants): each mutant must be reported, as one of its failure kinds, on at least
// a quarter of the seeds.
func TestWiderMutantsAreCaught(t *testing.T) {
	if !mutant.Build {
		t.Skip("runs in the sluice_mutants build (TestWiderMutantBuild)")
	}
	defer func() { mutant.Name = "" }()
	for _, c := range widerMutants {
		mutant.Name = c.mutant // before any world runs; read-only while they run
		seeds := widerSeeds(t)
		caught := 0
		for _, r := range runParallel(t, seeds, widerSets) {
			for _, k := range c.kinds {
				if r.Result.Has(k) {
					caught++
					break
				}
			}
		}
		t.Logf("mutant %s: %v on %d of %d seeds", c.mutant, c.kinds, caught, len(seeds))
		require.GreaterOrEqual(t, caught*4, len(seeds), "%s: fewer than 25%% of seeds "+
			"caught it", c.mutant)
	}
}

// TestWiderMutantBuild builds the sim tests with the mutant tag and runs
// TestWiderMutantsAreCaught there.
func TestWiderMutantBuild(t *testing.T) {
	if testing.Short() || mutant.Build {
		t.Skip("builds the package a second time")
	}
	out, err := exec.Command("go", "test", "-count=1", "-tags",
		"invariants,sluice_mutants", "-run", "^TestWiderMutantsAreCaught$",
		"-v", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "mutant replica/stale-producer-epoch: [zombie", "%s",
		out)
	require.NotContains(t, string(out), "SKIP", "%s", out)
}

// TestWiderSettings: the --set names switch the forms on and refuse bad values.
func TestWiderSettings(t *testing.T) {
	c := Draw(7)
	c.Zombie = ZombieSpec{}
	require.NoError(t, c.Set("zombie", "on"))
	require.True(t, c.Zombie.On)
	require.Equal(t, c.Topics[0].Name, c.Zombie.Topic)
	require.Positive(t, c.Zombie.EveryMs)
	require.NoError(t, c.Set("reader.tiny.chance", "0.4"))
	for _, r := range c.Readers {
		require.Equal(t, 0.4, r.TinyChance)
	}
	require.NoError(t, c.Set("audit.freshtrim.chance", "1"))
	require.Equal(t, 1.0, c.Audit.FreshTrimChance)
	require.Error(t, c.Set("vandal.badcrc.chance", "1.5"))
	require.Error(t, c.Set("zombie", "maybe"))
	require.NoError(t, c.Set("zombie", "off"))
	require.False(t, c.Zombie.On)
}
