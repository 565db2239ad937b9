package sim

import (
	"os"
	"strings"
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
// chosen where the safe default passes; the comments say how many of them failed with
// the setting when written (all on lost-write). A test run takes short, three seeds
// (about 1.5 CPU-s per setting); SLUICE_SIM_LONG=1 runs the whole lists (about 5 CPU-s
// per setting).
var unsafeCases = []struct {
	setting [2]string
	faults  [][2]string
	seeds   []uint64
	short   []uint64
	min     int // lost-write seeds required
}{
	// A leader's acknowledged acks=1 writes that no follower fetched yet are gone once
	// it is killed and another replica leads (6 of 8 seeds when written).
	{setting: [2]string{"acks", "1"},
		faults: [][2]string{{"faults.restart", "on"}, {"faults.crash", "on"}},
		seeds:  seedRange(1, 8), short: []uint64{2, 3, 4}, min: 3},
	// Followers fall out of the ISR quickly (a lag bound of 300 ms, slow disks); when
	// the last ISR member dies an out-of-sync replica leads without the records the ISR
	// acknowledged (3 of these 11 seeds when written; seed 2 fails liveness with the
	// default too and is left out).
	{setting: [2]string{"unclean.leader.election.enable", "true"},
		faults: [][2]string{{"faults.restart", "on"}, {"faults.crash", "on"},
			{"replica.lag.time.max.ms", "300"}, {"faults.slowdisk", "on"}},
		seeds: append([]uint64{1, 3, 4, 5, 6, 7, 8, 9, 10}, 21, 31),
		short: []uint64{1, 4, 5}, min: 3},
	// A clogged leader's followers fall behind and the ISR shrinks to the leader alone,
	// which min.insync.replicas=1 lets acknowledge acks=all writes; losing that one
	// disk loses them (seeds 20 23 30 when written).
	{setting: [2]string{"min.insync.replicas", "1"},
		faults: [][2]string{{"producer.acks", "all"}, {"replica.lag.time.max.ms", "300"},
			{"faults.diskloss", "on"}, {"faults.diskloss.every.ms", "1000"},
			{"faults.clog", "on"}, {"faults.clog.every.ms", "500"}},
		seeds: seedRange(17, 32), short: []uint64{20, 21, 23}, min: 2},
	// Followers acknowledge what they have not fsynced: a power loss of every node at
	// once loses acknowledged acks=all writes (5 of 8 seeds when written).
	{setting: [2]string{"log.flush.policy", "never"},
		faults: [][2]string{{"faults.powerloss", "on"}, {"faults.powerloss.every.ms", "2000"}},
		seeds:  seedRange(1, 8), short: seedRange(1, 3), min: 3},
}

// TestUnsafeClusterSettingsAreCaught: each of issue 8's known-unsafe settings, on
// three nodes under the faults that expose it, fails seeds with lost acknowledged
// writes, while the same seeds pass with the safe defaults. The seeds run by two
// workers; seeds replay identically, so the counts are fixed until the code changes.
func TestUnsafeClusterSettingsAreCaught(t *testing.T) {
	for _, c := range unsafeCases {
		t.Run(c.setting[0]+"="+c.setting[1], func(t *testing.T) {
			seeds := c.short
			if os.Getenv("SLUICE_SIM_LONG") != "" && !testing.Short() {
				seeds = c.seeds
			}
			safe := append(append([][2]string{}, unsafeBase...), c.faults...)
			for _, r := range runParallel(t, seeds, safe) {
				require.True(t, r.Result.Pass, "the default must pass: %s\n  %s\n  reproduce: %s",
					r.Result.Line(), strings.Join(r.Result.Summary(), "\n  "), reproduce(r, safe))
			}
			unsafe := append(append([][2]string{}, safe...), c.setting)
			lost := 0
			for _, r := range runParallel(t, seeds, unsafe) {
				if r.Result.Has("lost-write") {
					lost++
				}
			}
			t.Logf("%s=%s: lost acknowledged writes on %d of %d seeds", c.setting[0],
				c.setting[1], lost, len(seeds))
			require.GreaterOrEqual(t, lost, min(c.min, len(seeds)-1), "%s=%s", c.setting[0],
				c.setting[1])
		})
	}
}
