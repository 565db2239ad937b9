package main

import (
	"context"
	"fmt"
	"regexp"
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

// A single node is a quorum of one: it leads, it is the controller and the only
// broker.
func TestClusterDescribeSingleNode(t *testing.T) {
	addr := startTestNode(t)
	out, _ := cli(t, addr, 0, "", "cluster", "describe")
	require.Contains(t, out, "cluster id:   sluice-dev-cluster\ncontroller:   1\n")
	require.Regexp(t, `quorum:       leader 1, epoch 1, high-water mark \d+`, out)
	require.Regexp(t, `(?m)^1\s+voter \(leader\)\s+\d+\s+0\s+\d+$`, out)
	require.Regexp(t, `(?m)^1\s+`+regexp.QuoteMeta(addr)+`\s+-\s+live$`, out)
	_, errOut := cli(t, addr, 2, "", "cluster", "frobnicate")
	require.Contains(t, errOut, `unknown action "frobnicate"`)
	_, errOut = cli(t, addr, 2, "", "cluster", "unregister")
	require.Contains(t, errOut, "--id N is required")
	_, errOut = cli(t, addr, 1, "", "cluster", "unregister", "--id", "1")
	require.Contains(t, errOut, "without a metadata quorum")
}

// Three nodes of one quorum: the leader reports every voter with its log end and lag
// (from heartbeats), and every broker with its rack.
func TestClusterDescribeThreeNodes(t *testing.T) {
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
		ctl := controller.DefaultConfig()
		ctl.HeartbeatIntervalMs = 100
		nodes[i] = runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0",
			DataDir: t.TempDir(), Config: cfg, Controller: ctl, Rack: fmt.Sprintf("r%d", i+1),
			Voters: voters, QuorumTiming: raftmeta.TestTiming(),
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
	// Every voter heartbeats to the leader and is caught up; brokers listed with racks.
	var out string
	require.Eventually(t, func() bool {
		code, stdout, _ := runCLI(t, "", "cluster", "describe", "--bootstrap",
			nodes[2].Addr(), "--timeout", "5s")
		out = stdout
		return code == 0 && len(regexp.MustCompile(`(?m)^\d\s+voter.*\s0\s+\d+$`).
			FindAllString(stdout, -1)) == 3 &&
			len(regexp.MustCompile(`(?m)^\d\s+127\.0\.0\.1:\d+\s+r\d\s+live$`).
				FindAllString(stdout, -1)) == 3
	}, 10*time.Second, 50*time.Millisecond, "last output:\n%s", out)
	require.Regexp(t, `(?m)^\d\s+voter \(leader\)`, out)
	t.Log("\n" + out)

	// A voter cannot be unregistered, whichever node is asked (it forwards to the
	// controller), and the refusal's reason is printed.
	for _, n := range nodes {
		code, _, stderr := runCLI(t, "", "cluster", "unregister", "--id", "2", "--bootstrap",
			n.Addr(), "--timeout", "5s")
		require.Equal(t, 1, code, stderr)
		require.Contains(t, stderr, "voter of the metadata quorum", stderr)
	}
	code, _, stderr := runCLI(t, "", "cluster", "unregister", "--id", "7", "--bootstrap",
		nodes[0].Addr(), "--timeout", "5s")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stderr, "BROKER_ID_NOT_REGISTERED", stderr)
}

// A principal without DESCRIBE on the cluster is told so: the node answers DescribeQuorum
// with a top-level CLUSTER_AUTHORIZATION_FAILED and no topics, which the command once
// reported as a malformed answer.
func TestClusterDescribeNotAuthorized(t *testing.T) {
	cfg := broker.DefaultConfig()
	cfg.Authz = broker.AuthzConfig{Enabled: true, ClassName: "sluice"}
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Config: cfg})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	_, errOut := cli(t, n.Addr(), 1, "", "cluster", "describe")
	require.Contains(t, errOut, "sluice cluster describe: not authorized")
	require.NotContains(t, errOut, "malformed")
}
