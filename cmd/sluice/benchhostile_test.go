package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A small hostile run against an in-process node prints every figure and leaves
// nothing behind: no bench topic, no client quota (the e2e test
// TestHostileCombinedLoadLeavesAWellBehavedClientServed runs the full 2,000).
func TestBenchHostileLeavesNothingBehind(t *testing.T) {
	addr := startTestNode(t)
	o := hostileOpts{bootstrap: addr, conns: 30, quota: 100 << 10, size: 64,
		records: 200, bound: 10 * time.Second, baseline: 200 * time.Millisecond,
		hostile: 500 * time.Millisecond,
		attack: attackOpts{idle: 24, slow: 4, greedy: 2, slowInterval: 50 * time.Millisecond,
			openBound: 10 * time.Second}}
	var out strings.Builder
	require.NoError(t, benchHostile(context.Background(), o, &out))
	for _, test := range []string{"produce_hostile_baseline", "hostile_baseline_consume",
		"produce_hostile", "hostile_consume", "hostile_connections", "hostile_greedy",
		"hostile_node"} {
		require.Contains(t, out.String(), "test="+test+" ")
	}
	require.Contains(t, out.String(), "idle_accepted=24 idle_refused=0")
	require.Empty(t, benchTopics(t, addr))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	quotas, err := kadm.NewClient(cl).DescribeClientQuotas(ctx, false, nil)
	require.NoError(t, err)
	require.Empty(t, quotas, "the greedy clients' quota is removed")
}

func TestBenchHostileRefusesImpossibleCounts(t *testing.T) {
	code, _, stderr := runCLI(t, "", "bench", "hostile", "--conns", "10", "--slow", "8",
		"--greedy", "3")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "must not pass --conns")
}
