package raftmeta

import (
	"testing"

	"github.com/sluicemq/sluice/core/broker"

	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/internal/metatest"
)

// TestRaftConformanceSingleNode runs the port's single-node conformance suite against
// a one-voter raft quorum: proposals before the node elected itself are answered
// NotLeader, crashes leave entries appended but not applied (they commit at the next
// election), and snapshots compact the log.
func TestRaftConformanceSingleNode(t *testing.T) {
	fewChecks(t, 4)
	st := newStats()
	defer requireCommits(t, st)
	cases := 0
	metatest.Run(t, func(rt *rapid.T) metatest.Adapter {
		// A steady lease: under load (two make test loops and a sweep, load 5-6) the one
		// node stepped down so often with TestTiming's 100 ms lease that no case
		// committed anything. The suite's crashes make the leader changes it checks.
		c, err := newTestCluster(1, SteadyTestTiming(), st)
		if err != nil {
			rt.Fatal(err)
		}
		// Two cases in three (the first among them) let the node lead before the suite
		// proposes, so that commits are certain to be checked.
		cases++
		return nodeAdapter{testCluster: c, waitLeader: cases%3 != 0}
	})
}

// TestRaftConformanceThreeNodes runs the multi-node suite against three voters in this
// process, on 127.0.0.1 TCP: proposals on every node (followers answer NotLeader with
// a leader hint), crashes and restarts of one node or all, time passing, snapshots.
func TestRaftConformanceThreeNodes(t *testing.T) {
	fewChecks(t, 5)
	st := newStats()
	defer requireCommits(t, st)
	metatest.RunCluster(t, func(rt *rapid.T) metatest.Cluster {
		c, err := newTestCluster(3, SteadyTestTiming(), st)
		if err != nil {
			rt.Fatal(err)
		}
		return clusterAdapter{c}
	}, metatest.ClusterOptions{MaxActions: 30})
}

// requireCommits fails a suite run whose cases never reached a commit: the suite's
// checks would then have held vacuously.
func requireCommits(t *testing.T, st *stats) {
	t.Helper()
	t.Logf("over all cases: %s", st)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !t.Failed() && (st.outcomes[broker.MetaCommitted] == 0 || st.applied == 0) {
		t.Errorf("no proposal committed in any case")
	}
}
