package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// restartNodeAt starts `sluice node` again over the data and at the address of a node
// that was killed, so clients reconnect to the same address.
func restartNodeAt(t *testing.T, old *node, extraArgs ...string) *node {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "node-*.log")
	require.NoError(t, err)
	args := append([]string{"node", "--id", "1", "--listen", old.addr, "--data", old.data,
		"--http-listen="},
		extraArgs...)
	cmd := exec.Command(sluiceBinary(t), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	n := &node{t: t, addr: old.addr, data: old.data, cmd: cmd, log: logf}
	t.Cleanup(n.kill)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		if c, err := net.DialTimeout("tcp", n.addr, 200*time.Millisecond); err == nil {
			c.Close()
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("node did not listen again on %s within 15s; its log:\n%s", n.addr,
		n.logText())
	return nil
}

// rebalanceCounter counts what a kgo group member is told about its partitions.
type rebalanceCounter struct {
	mu                      sync.Mutex
	assigned, revoked, lost int
	assignedParts           int
}

func (c *rebalanceCounter) counts() (assigned, revoked, lost, parts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.assigned, c.revoked, c.lost, c.assignedParts
}

// TestKgoGroupMemberSurvivesNodeRestartWithoutRebalance: a franz-go consumer group
// member keeps its member id, generation and partitions across a kill -9 and restart
// of the node — the coordinator restores the group from __consumer_offsets — and is
// never told of a revocation or a new assignment.
func TestKgoGroupMemberSurvivesNodeRestartWithoutRebalance(t *testing.T) {
	props := filepath.Join(t.TempDir(), "node.properties")
	require.NoError(t, os.WriteFile(props, []byte("group.initial.rebalance.delay.ms=0\n"),
		0o600))
	n := startNode(t, "", "--config", props)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node log:\n%s", n.logText())
		}
	})
	const topic = "persisted-group"
	admin, err := kgo.NewClient(kgo.SeedBrokers(n.addr))
	require.NoError(t, err)
	defer admin.Close()
	_, err = kadm.NewClient(admin).CreateTopic(ctx(t, 10*time.Second), 3, 1, nil, topic)
	require.NoError(t, err)

	var rc rebalanceCounter
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.ConsumerGroup("survivor"),
		kgo.ConsumeTopics(topic), kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.assigned++
			rc.assignedParts += len(m[topic])
		}),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.revoked++
		}),
		kgo.OnPartitionsLost(func(context.Context, *kgo.Client, map[string][]int32) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.lost++
		}))
	require.NoError(t, err)
	pollCtx, stopPolling := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for pollCtx.Err() == nil {
			cl.PollFetches(pollCtx)
		}
	}()
	defer func() {
		stopPolling()
		<-polled
		cl.Close()
	}()

	waitFor(t, 15*time.Second, "the first assignment", func() bool {
		a, _, _, parts := rc.counts()
		return a == 1 && parts == 3
	})
	memberID, gen := cl.GroupMetadata()
	require.NotEmpty(t, memberID)
	time.Sleep(time.Second) // a few heartbeats of the settled generation

	n.kill()
	n = restartNodeAt(t, n, "--config", props)
	// Long enough for many heartbeats, and for a restored session (10 s, restarted at
	// load) to matter if it were not renewed.
	time.Sleep(4 * time.Second)

	a, r, l, parts := rc.counts()
	require.Equal(t, [4]int{1, 0, 0, 3}, [4]int{a, r, l, parts},
		"assigned, revoked, lost, partitions: no rebalance")
	id2, gen2 := cl.GroupMetadata()
	require.Equal(t, memberID, id2)
	require.Equal(t, gen, gen2)

	groups, err := kadm.NewClient(admin).DescribeGroups(ctx(t, 10*time.Second), "survivor")
	require.NoError(t, err)
	g := groups["survivor"]
	require.NoError(t, g.Err)
	require.Equal(t, "Stable", g.State)
	require.Len(t, g.Members, 1)
	require.Equal(t, memberID, g.Members[0].MemberID)
}

// waitFor polls cond every 50 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.FailNow(t, fmt.Sprintf("timed out after %v waiting for %s", d, what))
}
