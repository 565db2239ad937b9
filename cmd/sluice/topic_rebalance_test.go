package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/controller"
)

func TestParseRebalance(t *testing.T) {
	require.True(t, wantsRebalance([]string{"--rebalance", "--dry-run"}))
	require.False(t, wantsRebalance([]string{"orders", "--partition", "0", "--cancel"}))
	o, err := parseRebalance([]string{"--rebalance", "orders", "clicks", "--brokers", "1,2,4",
		"--dry-run"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"orders", "clicks"}, o.topics)
	require.Equal(t, []int32{1, 2, 4}, o.brokers)
	require.True(t, o.dryRun)
	o, err = parseRebalance([]string{"--rebalance", "--wait"}, io.Discard)
	require.NoError(t, err)
	require.Empty(t, o.topics)
	require.True(t, o.wait)
	for _, bad := range [][]string{
		{"--rebalance", "--dry-run", "--wait"},
		{"--rebalance", "--brokers", "1,x"},
		{"--rebalance", "--nonsense"},
	} {
		_, err := parseRebalance(bad, io.Discard)
		require.ErrorIs(t, err, errUsage, "%v", bad)
	}
}

func TestRebalancePlanIsPrinted(t *testing.T) {
	parts := []controller.PartitionReplicas{
		{Topic: "orders", Partition: 0, Replicas: []int32{1, 2}},
		{Topic: "orders", Partition: 1, Replicas: []int32{2, 1}},
	}
	moves, err := controller.PlanRebalance(parts, []int32{1, 2, 3, 4})
	require.NoError(t, err)
	var out bytes.Buffer
	printRebalancePlan(&out, parts, []int32{1, 2, 3, 4}, moves)
	require.Contains(t, out.String(), "TOPIC")
	require.Contains(t, out.String(), "orders  1          2,1       2,3")
	require.Contains(t, out.String(), "4       0             1")
	out.Reset()
	printRebalancePlan(&out, parts, []int32{1, 2}, nil)
	require.Contains(t, out.String(), "balanced already")
}
