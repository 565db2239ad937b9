package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// startMetricsCluster runs three voters, each with its HTTP listener, and waits until
// every node's metrics list the three brokers unfenced.
func startMetricsCluster(t *testing.T) []*runtime.Node {
	t.Helper()
	voters := []raftmeta.Voter{{ID: 1, Addr: freeAddr(t)}, {ID: 2, Addr: freeAddr(t)},
		{ID: 3, Addr: freeAddr(t)}}
	nodes := make([]*runtime.Node, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		cfg := broker.DefaultConfig()
		cfg.NodeID = int32(i + 1)
		require.NoError(t, cfg.Set("replica.lag.time.max.ms", "2000"))
		ctl := controller.DefaultConfig()
		ctl.SessionTimeoutMs, ctl.HeartbeatIntervalMs = 1500, 200
		nodes[i] = runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0",
			DataDir: t.TempDir(), Config: cfg, Controller: ctl, HTTPListen: "127.0.0.1:0",
			Logger:       zaptest.NewLogger(t).Named(fmt.Sprintf("n%d", i+1)),
			DrainTimeout: 2 * time.Second, Voters: voters,
			QuorumTiming: raftmeta.TestTiming()})
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = nodes[i].Start(context.Background()) }()
	}
	wg.Wait()
	for i, n := range nodes {
		require.NoError(t, errs[i])
		t.Cleanup(func() { _ = n.Close() })
	}
	for _, n := range nodes {
		require.Eventually(t, func() bool {
			v, _ := sumFor(scrape(t, n), "sluice_brokers", map[string]string{"state": "unfenced"})
			return v == 3
		}, 20*time.Second, 50*time.Millisecond, "every node sees three unfenced brokers")
	}
	return nodes
}

// gauge is family's value on n's /metrics (0 when absent).
func gauge(t *testing.T, fams map[string]*dto.MetricFamily, family string,
	labels map[string]string) float64 {
	v, _ := sumFor(fams, family, labels)
	return v
}

// The controller and quorum series of a 3-node cluster: exactly one node's controller
// is active, every node has learnt of a quorum leader; when the active node stops, the
// survivors count the election, one of them becomes active, and both report the stopped
// broker fenced once its session expires.
func TestMetricsShowTheControllerElectionsAndFencedBrokers(t *testing.T) {
	nodes := startMetricsCluster(t)
	active, before := -1, make([]float64, 3)
	require.Eventually(t, func() bool {
		active = -1
		for i, n := range nodes {
			fams := scrape(t, n)
			before[i] = gauge(t, fams, "sluice_quorum_leader_changes_total", nil)
			if gauge(t, fams, "sluice_controller_active", nil) == 1 {
				if active >= 0 {
					return false // two at once: a stale scrape; look again
				}
				active = i
			}
		}
		return active >= 0
	}, 10*time.Second, 50*time.Millisecond, "one active controller")
	for i := range nodes {
		require.GreaterOrEqual(t, before[i], 1.0, "node %d learnt of a leader", i+1)
	}

	require.NoError(t, nodes[active].Close())
	var survivors []int
	for i := range nodes {
		if i != active {
			survivors = append(survivors, i)
		}
	}
	require.Eventually(t, func() bool {
		actives := 0
		for _, i := range survivors {
			fams := scrape(t, nodes[i])
			if gauge(t, fams, "sluice_quorum_leader_changes_total", nil) <= before[i] ||
				gauge(t, fams, "sluice_brokers", map[string]string{"state": "fenced"}) != 1 {
				return false
			}
			actives += int(gauge(t, fams, "sluice_controller_active", nil))
		}
		return actives == 1
	}, 30*time.Second, 100*time.Millisecond,
		"a survivor leads, both counted the election and see one fenced broker")
}

// A partition with three replicas in sync is not under-replicated; when a follower's
// node stops, its leader reports it under-replicated (the ISR shrank).
func TestMetricsShowAPartitionUnderReplicatedWhenAFollowerStops(t *testing.T) {
	nodes := startMetricsCluster(t)
	var seeds []string
	for _, n := range nodes {
		seeds = append(seeds, n.Addr())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	require.NoError(t, err)
	defer cl.Close()
	_, err = kadm.NewClient(cl).CreateTopic(testCtx(t, 10*time.Second), 1, 3, nil, "ur")
	require.NoError(t, err)
	require.NoError(t, cl.ProduceSync(testCtx(t, 10*time.Second),
		&kgo.Record{Topic: "ur", Value: []byte("v")}).FirstErr())

	tp := map[string]string{"topic": "ur", "partition": "0"}
	leader, active := -1, -1
	require.Eventually(t, func() bool {
		leader, active = -1, -1
		for i, n := range nodes {
			fams := scrape(t, n)
			if gauge(t, fams, "sluice_partition_leader", tp) == 1 &&
				gauge(t, fams, "sluice_partition_in_sync_replicas", tp) == 3 &&
				gauge(t, fams, "sluice_partition_under_replicated", tp) == 0 {
				leader = i
			}
			if gauge(t, fams, "sluice_controller_active", nil) == 1 {
				active = i
			}
		}
		return leader >= 0 && active >= 0
	}, 20*time.Second, 100*time.Millisecond, "ur-0 led with a full ISR")

	victim := 0 // a follower, not the active controller if there is a choice
	for victim == leader || (victim == active && active != leader) {
		victim++
	}
	require.NoError(t, nodes[victim].Close())
	require.Eventually(t, func() bool {
		return gauge(t, scrape(t, nodes[leader]), "sluice_partition_under_replicated", tp) == 1
	}, 20*time.Second, 100*time.Millisecond, "the leader reports ur-0 under-replicated")
}
