package sim

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/internal/metatest"
)

// settleBoundMs bounds one Settle of the bare model in virtual time: elections, apply
// lag and late commits all end well within it when a majority is up. passMs is what
// Pass lets go by: 25 mean commit latencies.
const (
	settleBoundMs = 20_000
	passMs        = 5
)

// TestMetaQuorumConformance3 and TestMetaQuorumConformance5 run the multi-node
// conformance suite against the model's quorum (metaquorum.go) in a bare World:
// leadership moving (drawn moves at Pass, the leader's crash, a leader without a
// majority stepping down), deposed leaders hearing late and proposing meanwhile,
// followers applying after a drawn lag, restarts from a node's own snapshot plus
// replay, lost metadata disks, with MetaErrors and unknown outcomes drawn too.
func TestMetaQuorumConformance3(t *testing.T) {
	runQuorumSuite(t, 3, quorumPlant{}, 40)
}

func TestMetaQuorumConformance5(t *testing.T) {
	runQuorumSuite(t, 5, quorumPlant{}, 40)
}

// quorumPlant selects a planted bug in the model.
type quorumPlant struct{ skip, notLeaderCommits bool }

func runQuorumSuite(t *testing.T, size int, plant quorumPlant, actions int) {
	t.Helper()
	stats := map[string]int{}
	// The awkward cases must have happened, or the suite checked them vacuously. A
	// deposed leader's proposal is rare (a few cases in 100 draw it), so one batch of
	// cases may miss it: up to three batches run until each has happened.
	awkward := []string{"meta-elected", "meta-deposed", "meta-deposed-proposal",
		"meta-disk-lost", "meta-installed", "applied-late", "snapshot-restart"}
	for batch := 0; batch < 3 && !t.Failed(); batch++ {
		metatest.RunCluster(t, func(rt *rapid.T) metatest.Cluster {
			return newSimCluster(rt, size, plant, stats)
		}, metatest.ClusterOptions{MaxActions: actions})
		if !slices.ContainsFunc(awkward, func(k string) bool { return stats[k] == 0 }) {
			break
		}
	}
	t.Logf("model events over all cases: %v", stats)
	if !t.Failed() {
		for _, k := range awkward {
			if stats[k] == 0 {
				t.Errorf("no case exercised %s", k)
			}
		}
	}
}

// plantEnv names the planted bug TestMetaQuorumPlanted runs with; unset, it skips.
const plantEnv = "SLUICE_SIM_QUORUM_PLANT"

// TestMetaQuorumConformanceCatchesPlantedBugs proves the suite can fail the model: a
// lagging follower that skips a record (caught as a gap, M2, or as a node that never
// catches up) and a deposed leader's NotLeader proposal that still commits (caught as
// M3) are each found. The failing suite runs in a child process of this test binary (a
// failing rapid.Check fails its *testing.T), bounded in checks and shrink time.
func TestMetaQuorumConformanceCatchesPlantedBugs(t *testing.T) {
	for _, c := range []struct{ plant, want string }{
		// A gap, or (the skipped record the last) a node that never catches up.
		{"skip", `M2: node \d+: MetaApplied \d+ after|the nodes did not all apply`},
		// Whichever the suite sees first: the commit or the answer.
		{"not-leader-commits", `M3: proposal \d+ answered not-leader (but )?committed`},
	} {
		t.Run(c.plant, func(t *testing.T) {
			// A fixed rapid seed: with a random one, 200 checks once missed the
			// not-leader-commits bug (make test failed); this seed finds both.
			cmd := exec.Command(os.Args[0], "-test.run=^TestMetaQuorumPlanted$",
				"-rapid.checks=200", "-rapid.shrinktime=2s", "-rapid.nofailfile",
				"-rapid.seed=2")
			cmd.Env = append(os.Environ(), plantEnv+"="+c.plant)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the cluster suite passed a model with the %s bug:\n%s", c.plant,
					out)
			}
			if !regexp.MustCompile(c.want).Match(out) {
				t.Fatalf("the %s bug failed the suite, but not with %q:\n%s", c.plant,
					c.want, out)
			}
		})
	}
}

// TestMetaQuorumPlanted runs the suite on a model with the bug plantEnv names; it is
// meant to fail (TestMetaQuorumConformanceCatchesPlantedBugs runs it).
func TestMetaQuorumPlanted(t *testing.T) {
	var plant quorumPlant
	switch os.Getenv(plantEnv) {
	case "skip":
		plant.skip = true
	case "not-leader-commits":
		plant.notLeaderCommits = true
	default:
		t.Skip("runs only as the child of TestMetaQuorumConformanceCatchesPlantedBugs")
	}
	runQuorumSuite(t, 3, plant, 40)
}

// simCluster is the model's quorum in a bare World, as the suite drives it.
type simCluster struct {
	t     *rapid.T
	w     *World
	nodes []*simClusterNode
	stats map[string]int
}

type simClusterNode struct {
	c       *simCluster
	id      int32
	gen     uint64
	up      bool
	deliver func(broker.Input)
}

func newSimCluster(rt *rapid.T, size int, plant quorumPlant, stats map[string]int) *simCluster {
	cfg := Config{Seed: rapid.Uint64().Draw(rt, "seed"),
		Timing: Timing{MetaFloorUs: 10, MetaMeanUs: 200},
		Faults: Faults{
			MetaErrorChance:   rapid.SampledFrom([]float64{0, 0, 0.3}).Draw(rt, "errs"),
			MetaUnknownChance: rapid.SampledFrom([]float64{0, 0.1, 0.3}).Draw(rt, "unk"),
		}}
	w := &World{cfg: cfg, tr: newTracer(), stats: Stats{Faults: map[string]int{}}}
	w.q.limit = maxQueuedEvents
	w.meta = newMetaLog(w)
	w.meta.plantSkip, w.meta.plantNotLeaderCommits = plant.skip, plant.notLeaderCommits
	w.meta.lossChance = metaLossChance
	c := &simCluster{t: rt, w: w, stats: stats}
	for i := 0; i < size; i++ {
		n := &simClusterNode{c: c, id: int32(i)}
		c.nodes = append(c.nodes, n)
		w.meta.join(n)
	}
	return c
}

func (n *simClusterNode) metaID() int32   { return n.id }
func (n *simClusterNode) metaGen() uint64 { return n.gen }
func (n *simClusterNode) metaUp() bool    { return n.up }
func (n *simClusterNode) metaErrSpell() bool {
	return n.c.w.cfg.Faults.MetaErrorChance > 0
}

func (n *simClusterNode) metaInput(in broker.Input) {
	if a, ok := in.(broker.MetaApplied); ok && n.c.w.meta.leader != int(n.id) &&
		a.Index < uint64(len(n.c.w.meta.recs)) {
		n.c.stats["applied-late"]++ // a follower behind the log
	}
	n.deliver(in)
}

func (c *simCluster) Size() int             { return len(c.nodes) }
func (c *simCluster) NodeID(node int) int32 { return int32(node) + 1 }

func (c *simCluster) Boot(node int, deliver func(broker.Input)) broker.Start {
	n := c.nodes[node]
	n.gen++
	n.up, n.deliver = true, deliver
	st, err := c.w.meta.start(n)
	if err != nil {
		c.t.Fatalf("node %d: metadata log unreadable: %v", node, err)
	}
	if st.SnapshotIndex > 0 {
		c.stats["snapshot-restart"]++
	}
	c.w.meta.booted(n)
	return st
}

func (c *simCluster) Propose(node int, rec meta.Record, token uint64) {
	c.w.meta.propose(c.nodes[node], rec, token)
}

func (c *simCluster) Crash(node int) {
	n := c.nodes[node]
	n.up = false
	c.w.meta.nodeStopped(n)
	n.gen++
	c.checkWorld()
}

func (c *simCluster) Snapshot(node int) (bool, error) {
	return true, snapshotLocal(c.w.meta.q[node].local)
}

// Settle runs the model's events until done, none are left, or the bound passed.
func (c *simCluster) Settle(done func() bool) {
	end := c.w.now + settleBoundMs*ms
	for !done() && c.w.now <= end {
		if !c.step() {
			break
		}
	}
	c.checkWorld()
}

// Pass moves leadership with a drawn chance, then lets passMs of virtual time go by
// (the clock moves on even when no event is due, so a distant election comes).
func (c *simCluster) Pass() {
	if c.w.meta.qr.Chance(0.4) {
		c.w.meta.moveLeader()
	}
	end := c.w.now + passMs*ms
	for at, ok := c.w.q.peekTime(); ok && at <= end; at, ok = c.w.q.peekTime() {
		c.step()
	}
	c.w.now = end
	c.checkWorld()
}

func (c *simCluster) step() bool {
	e, ok := c.w.q.pop()
	if !ok {
		return false
	}
	c.w.now = e.at
	e.fn()
	return true
}

func (c *simCluster) Close() {
	for k, v := range c.w.stats.Faults {
		c.stats[k] += v
	}
	c.checkWorld()
}

// checkWorld fails on what the model itself flagged (a rejected record committed).
func (c *simCluster) checkWorld() {
	if len(c.w.failures) > 0 {
		var s []string
		for _, f := range c.w.failures {
			s = append(s, f.String())
		}
		c.t.Fatalf("the model failed: %s", strings.Join(s, "; "))
	}
}
