package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// clusterFaultSets switches on every cluster fault kind (and nothing else) often.
var clusterFaultSets = [][2]string{{"nodes", "3"}, {"faults", "off"}, {"members", "0"},
	{"committers", "0"}, {"faults.split", "on"}, {"faults.split.every.ms", "1500"},
	{"faults.oneway", "on"}, {"faults.oneway.every.ms", "1500"},
	{"faults.quorumleader", "on"}, {"faults.quorumleader.every.ms", "1500"},
	{"faults.leaderpeers", "on"}, {"faults.leaderpeers.every.ms", "1500"},
	{"faults.diskloss", "on"}, {"faults.diskloss.every.ms", "2000"},
	{"faults.powerloss", "on"}, {"faults.powerloss.every.ms", "3000"}}

// TestClusterFaultsAreInjectedAndDrawn: with every cluster fault kind on, a clustered
// run injects each of them (a cut-off quorum leader is deposed, a lost disk is
// reinstalled from the quorum), the timeline draws the cuts on the peer links and the
// lost disk as a node down, the run replays identically, and the checks hold.
func TestClusterFaultsAreInjectedAndDrawn(t *testing.T) {
	run := RunOne(3, clusterFaultSets, 0, Options{Timeline: true})
	require.NoError(t, run.Err)
	require.True(t, run.Result.Pass, "%s\n  reproduce: %s",
		strings.Join(run.Result.Summary(), "\n  "), reproduce(run, clusterFaultSets))
	f := run.Result.Stats.Faults
	for _, k := range []string{"split", "oneway", "quorumleader", "leaderpeers", "diskloss",
		"powerloss", "meta-leader-cut-off", "meta-installed"} {
		require.Positive(t, f[k], "%s: injected %v", k, f)
	}
	path, err := run.WriteTimeline(t.TempDir(), nil)
	require.NoError(t, err)
	p := readTimeline(t, path)
	peerCuts, nodeCuts := 0, 0
	for _, s := range p.Spans {
		if s.Kind != "partition" {
			continue
		}
		switch p.Lanes[s.Lane].Kind {
		case "peer":
			peerCuts++
		case "node":
			nodeCuts++
		}
	}
	require.Positive(t, peerCuts, "cuts between nodes are drawn on the peer links")
	require.Positive(t, nodeCuts, "an isolated node's lane is shaded")
	marks := map[string]int{}
	for _, m := range p.Marks {
		marks[m.Kind]++
	}
	require.Positive(t, marks["powerloss"])
	require.Positive(t, marks["split"])
	again := RunOne(3, clusterFaultSets, 0, Options{})
	require.Equal(t, run.Result.Line(), again.Result.Line(), "the seed replays identically")
}

// TestClusterFaultsLeaveOneNodeAlone: the cluster kinds switched on in a one-node
// world draw and inject nothing: its trace is the one without them.
func TestClusterFaultsLeaveOneNodeAlone(t *testing.T) {
	on := [][2]string{{"nodes", "1"}, {"faults.split", "on"}, {"faults.oneway", "on"},
		{"faults.quorumleader", "on"}, {"faults.leaderpeers", "on"},
		{"faults.diskloss", "on"}, {"faults.powerloss", "on"}}
	a := RunOne(4, on, 2000, Options{})
	b := RunOne(4, [][2]string{{"nodes", "1"}, {"faults.split", "off"}, {"faults.oneway", "off"},
		{"faults.quorumleader", "off"}, {"faults.leaderpeers", "off"},
		{"faults.diskloss", "off"}, {"faults.powerloss", "off"}}, 2000, Options{})
	require.NoError(t, a.Err)
	require.Equal(t, a.Result.Trace, b.Result.Trace)
	require.Zero(t, a.Result.Stats.Faults["diskloss"]+a.Result.Stats.Faults["split"])
}

// TestWipedReplicaIsNotElectedBeforeItCaughtUp is issue 8: a node restarted over an
// empty disk must not be elected, nor keep ISR places, before it caught up. Before the
// fix its re-registration was refused while quorum leadership moved, the other ISR
// members were fenced, and it was elected with an empty log, losing acknowledged
// acks=all writes. It registers its new storage id now, and the controller takes it
// out of every ISR before unfencing it (docs/replication.md, "Lost disks").
func TestWipedReplicaIsNotElectedBeforeItCaughtUp(t *testing.T) {
	sets := [][2]string{{"nodes", "3"}, {"faults", "off"}, {"members", "0"},
		{"committers", "0"}, {"faults.diskloss", "on"}, {"faults.diskloss.every.ms", "700"},
		{"faults.restart", "on"}, {"faults.restart.every.ms", "500"}}
	for _, r := range runParallel(t, []uint64{1, 2, 3, 5, 7}, sets) {
		require.True(t, r.Result.Pass, "%s\n  %s\n  reproduce: %s", r.Result.Line(),
			strings.Join(r.Result.Summary(), "\n  "), reproduce(r, sets))
	}
}
