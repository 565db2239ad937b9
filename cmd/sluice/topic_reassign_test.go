package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/internal/testport"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

func TestParseReassign(t *testing.T) {
	o, err := parseReassign([]string{"orders", "--partition", "2", "--replicas", "4, 2,3",
		"--wait"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "orders", o.topic)
	require.Equal(t, 2, o.partition)
	require.Equal(t, []int32{4, 2, 3}, o.replicas)
	require.True(t, o.wait)
	o, err = parseReassign([]string{"orders", "--partition", "0", "--cancel"}, io.Discard)
	require.NoError(t, err)
	require.True(t, o.cancel)
	for _, bad := range [][]string{
		{"orders", "--replicas", "1"},
		{"orders", "--partition", "0"},
		{"orders", "--partition", "0", "--replicas", "1", "--cancel"},
		{"orders", "--partition", "0", "--cancel", "--wait"},
		{"orders", "--partition", "0", "--replicas", "1,x"},
		{"orders", "--partition", "0", "--replicas", "1,-2"},
		{"--partition", "0", "--replicas", "1"},
	} {
		_, err := parseReassign(bad, io.Discard)
		require.ErrorIs(t, err, errUsage, "%v", bad)
	}
}

// startThreeNodes starts three nodes of one quorum and waits until each is unfenced;
// it returns a Kafka address.
func startThreeNodes(t *testing.T) string {
	t.Helper()
	return startThreeNodeCluster(t)[0].Addr()
}

// startThreeNodeCluster is startThreeNodes returning the nodes (node i+1 at index i);
// opts change every node's broker configuration.
func startThreeNodeCluster(t *testing.T, opts ...func(*broker.Config)) []*runtime.Node {
	t.Helper()
	free := func() string {
		addr, err := testport.Addr()
		require.NoError(t, err)
		return addr
	}
	voters := []raftmeta.Voter{{ID: 1, Addr: free()}, {ID: 2, Addr: free()},
		{ID: 3, Addr: free()}}
	nodes := make([]*runtime.Node, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		cfg := broker.DefaultConfig()
		cfg.NodeID = int32(i + 1)
		for _, o := range opts {
			o(&cfg)
		}
		ctl := controller.DefaultConfig()
		ctl.HeartbeatIntervalMs = 100
		nodes[i] = runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0",
			DataDir: t.TempDir(), Config: cfg, Controller: ctl, Rack: fmt.Sprintf("r%d", i+1),
			Voters: voters, QuorumTiming: raftmeta.SteadyTestTiming(),
			DrainTimeout: 2 * time.Second})
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = nodes[i].Start(context.Background()) }()
	}
	wg.Wait()
	for i, n := range nodes {
		require.NoError(t, errs[i])
		t.Cleanup(func() { _ = n.Close() })
	}
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if st, _ := n.Membership(); !st.Registered || st.Fenced {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond)
	return nodes
}

// The reassignment commands against three nodes: a partition of one replica moves to
// all three and the command waits for it; refusals read as such.
func TestTopicReassignEndToEnd(t *testing.T) {
	addr := startThreeNodes(t)
	cli(t, addr, 0, "", "topic", "create", "moved", "--partitions", "1",
		"--replication-factor", "1")
	out, _ := cli(t, addr, 0, "", "topic", "reassignments")
	require.Equal(t, "no reassignment in progress\n", out)

	out, _ = cli(t, addr, 0, "", "topic", "reassign", "moved", "--partition", "0",
		"--replicas", "3,2,1", "--wait")
	require.Equal(t, "reassignment of moved-0 to replicas 3,2,1 started\n"+
		"reassignment of moved-0 complete\n", out)
	out, _ = cli(t, addr, 0, "", "topic", "describe", "moved")
	require.Regexp(t, `(?m)^0\s+\d\s+3,2,1\s+`, out)
	require.NotContains(t, out, "Reassigning")

	_, errOut := cli(t, addr, 1, "", "topic", "reassign", "moved", "--partition", "0",
		"--cancel")
	require.Contains(t, errOut, "moved-0 is not being reassigned: nothing to cancel")
	_, errOut = cli(t, addr, 1, "", "topic", "reassign", "moved", "--partition", "0",
		"--replicas", "1,9")
	require.Contains(t, errOut, "invalid replica assignment")
	require.Contains(t, errOut, "broker 9")
	_, errOut = cli(t, addr, 1, "", "topic", "reassign", "moved", "--partition", "5",
		"--replicas", "1")
	require.Contains(t, errOut, "partition moved-5 does not exist")
}
