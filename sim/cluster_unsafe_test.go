package sim

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// unsafeBase is every unsafe-settings case's start: three nodes, no drawn fault, no
// groups or committers (cheaper seeds; the producers' acknowledged writes are what is
// at stake).
var unsafeBase = [][2]string{{"nodes", "3"}, {"faults", "off"}, {"members", "0"},
	{"committers", "0"}}

// unsafeCases are issue 8's known-unsafe settings, each with the faults that expose
// it and the seeds it runs (docs/simulation.md, "Cluster faults"). The seed lists were
// first chosen where the safe default passes; the comments say how many of them failed
// with the setting when written (all on lost-write). A test run tries them two at a
// time until enough show it (TestUnsafeClusterSettingsAreCaught).
var unsafeCases = []struct {
	setting [2]string
	faults  [][2]string
	seeds   []uint64 // tried two at a time until min show the contrast
	min     int      // lost-write seeds required (at most 2 unless SLUICE_SIM_LONG)
	// offline: a partition left without a leader for good counts as the loss too
	// (liveness): the controller does not elect a replica whose disk was lost, so the
	// records only it held are gone without a lost-write on the record.
	offline bool
}{
	// A leader's acknowledged acks=1 writes that no follower fetched yet are gone once
	// it is killed and another replica leads (6 of 8 seeds when written).
	{setting: [2]string{"acks", "1"},
		faults: [][2]string{{"faults.restart", "on"}, {"faults.crash", "on"}},
		seeds:  seedRange(1, 24), min: 3},
	// Followers fall out of the ISR quickly (a lag bound of 300 ms, slow disks); when
	// the last ISR member dies an out-of-sync replica leads without the records the ISR
	// acknowledged (3 of these 11 seeds when written; seed 2 fails liveness with the
	// default too and is left out).
	{setting: [2]string{"unclean.leader.election.enable", "true"},
		faults: [][2]string{{"faults.restart", "on"}, {"faults.crash", "on"},
			{"replica.lag.time.max.ms", "300"}, {"faults.slowdisk", "on"}},
		seeds: append([]uint64{1, 3, 4, 5, 6, 7, 8, 9, 10}, seedRange(11, 31)...), min: 3},
	// A clogged leader's followers fall behind and the ISR shrinks to the leader alone,
	// which min.insync.replicas=1 lets acknowledge acks=all writes; losing that one
	// disk loses them (seeds 20 23 30 when written, as lost writes: the wiped leader was
	// elected again). Since issue 8 a replica whose disk was lost is not elected, so the
	// partition stays offline instead, the records gone with the disk.
	{setting: [2]string{"min.insync.replicas", "1"},
		faults: [][2]string{{"producer.acks", "all"}, {"replica.lag.time.max.ms", "300"},
			{"faults.diskloss", "on"}, {"faults.diskloss.every.ms", "1000"},
			{"faults.clog", "on"}, {"faults.clog.every.ms", "500"}},
		seeds: seedRange(17, 40), min: 2, offline: true},
	// Followers acknowledge what they have not fsynced: a power loss of every node at
	// once loses acknowledged acks=all writes (5 of 8 seeds when written).
	{setting: [2]string{"log.flush.policy", "never"},
		faults: [][2]string{{"faults.powerloss", "on"}, {"faults.powerloss.every.ms", "2000"}},
		seeds:  seedRange(1, 24), min: 3},
}

// TestUnsafeClusterSettingsAreCaught: each of issue 8's known-unsafe settings, on
// three nodes under the faults that expose it, fails seeds with lost acknowledged
// writes that the safe defaults do not lose on the same seeds. Seeds run two at a time
// from the case's list until min of them showed the contrast, so a change elsewhere
// that moves which seeds lose writes does not break the test (a fixed short list did,
// after a merge changed the traces); the whole list failing to show it does.
// SLUICE_SIM_LONG=1 runs the whole lists and logs the counts.
func TestUnsafeClusterSettingsAreCaught(t *testing.T) {
	long := os.Getenv("SLUICE_SIM_LONG") != "" && !testing.Short()
	for _, c := range unsafeCases {
		t.Run(c.setting[0]+"="+c.setting[1], func(t *testing.T) {
			safe := append(append([][2]string{}, unsafeBase...), c.faults...)
			unsafe := append(append([][2]string{}, safe...), c.setting)
			want := min(c.min, 2)
			shown, ran := 0, 0
			for i := 0; i < len(c.seeds) && (long || shown < want); i += 2 {
				batch := c.seeds[i:min(i+2, len(c.seeds))]
				ran += len(batch)
				for _, r := range runParallel(t, batch, unsafe) {
					lost := r.Result.Has("lost-write") ||
						(c.offline && r.Result.Has("liveness"))
					if lost && safeKeeps(t, r.Config.Seed, safe, c.offline) {
						shown++
					}
				}
			}
			t.Logf("%s=%s: lost acknowledged writes the default keeps on %d of %d seeds",
				c.setting[0], c.setting[1], shown, ran)
			require.GreaterOrEqual(t, shown, want, "%s=%s", c.setting[0], c.setting[1])
		})
	}
}

// safeKeeps runs seed with the safe settings and reports whether it lost no
// acknowledged write there, nor (offline) left a partition offline (other failures are
// other tests' business; they are logged).
func safeKeeps(t *testing.T, seed uint64, safe [][2]string, offline bool) bool {
	t.Helper()
	r := runParallel(t, []uint64{seed}, safe)[0]
	if !r.Result.Pass {
		t.Logf("seed %d fails with the safe defaults too: %s\n  reproduce: %s", seed,
			r.Result.Line(), reproduce(r, safe))
	}
	return !r.Result.Has("lost-write") && !(offline && r.Result.Has("liveness"))
}
