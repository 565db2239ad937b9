package main

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
)

func benchParts(leaders ...int32) []kadm.PartitionDetail {
	var ps []kadm.PartitionDetail
	for i, l := range leaders {
		ps = append(ps, kadm.PartitionDetail{Partition: int32(i), Leader: l,
			ISR: []int32{1, 2, 3}})
	}
	return ps
}

// A failover round needs a partition led by a node other than the controller (or by
// the controller, for kill9_controller); when the ISRs are full but the controller leads
// every partition, pick reports that so the bench asks for preferred leaders instead of
// waiting out its round bound.
func TestPickPartitionForAFailoverRound(t *testing.T) {
	part, leader, full := pickPartition(benchParts(2, 2, 2), 2, 3, "kill9", 3)
	require.Equal(t, int32(-1), part, "every partition is led by the controller")
	require.Equal(t, int32(-1), leader)
	require.Equal(t, 3, full, "the ISRs are full: elect preferred leaders")

	part, leader, full = pickPartition(benchParts(2, 3, 1), 2, 3, "kill9", 3)
	require.Equal(t, []int32{1, 3, 3}, []int32{part, leader, int32(full)})

	part, leader, _ = pickPartition(benchParts(3, 1, 2), 2, 3, "kill9_controller", 3)
	require.Equal(t, []int32{2, 2}, []int32{part, leader})

	short := benchParts(1, 3, 1)
	short[1].ISR = []int32{1, 3}
	part, _, full = pickPartition(short, 2, 3, "kill9", 3)
	require.Equal(t, []int32{-1, 0}, []int32{part, int32(full)}, "an ISR is not full yet")

	part, _, _ = pickPartition(benchParts(5, 1), 2, 3, "kill9", 3)
	require.Equal(t, int32(1), part, "a leader the bench did not start is skipped")
}
