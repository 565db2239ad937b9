package controller

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/meta"
)

// TestPlacementProperty: over random brokers (with or without racks), partition counts
// and replication factors, placement uses distinct brokers per partition, spreads
// leaders evenly (±1) and, without racks, all replicas evenly (±1); with racks, a
// partition's replicas are in distinct racks whenever the factor allows.
func TestPlacementProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 7).Draw(t, "brokers")
		racked := rapid.Bool().Draw(t, "racked")
		var bs []meta.Broker
		racks := map[string]bool{}
		for i := range n {
			b := meta.Broker{ID: int32(10 + i*3), State: meta.BrokerUnfenced}
			if racked {
				b.Rack = rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "rack")
				racks[b.Rack] = true
			}
			bs = append(bs, b)
		}
		parts := rapid.Int32Range(1, 40).Draw(t, "partitions")
		rf := int16(rapid.IntRange(1, n).Draw(t, "rf"))
		a, code, _ := Place(bs, parts, rf, rand.New(rand.NewSource(rapid.Int64().Draw(t, "s"))))
		require.Zero(t, code)
		require.Len(t, a, int(parts))
		leaders, replicas := map[int32]int{}, map[int32]int{}
		rackOf := map[int32]string{}
		for _, b := range bs {
			leaders[b.ID], replicas[b.ID] = 0, 0
			rackOf[b.ID] = b.Rack
		}
		for _, rs := range a {
			require.Len(t, rs, int(rf))
			seen, seenRack := map[int32]bool{}, map[string]bool{}
			for _, r := range rs {
				require.False(t, seen[r], "%v repeats a broker", rs)
				seen[r] = true
				seenRack[rackOf[r]] = true
				replicas[r]++
			}
			leaders[rs[0]]++
			require.Equal(t, min(int(rf), max(len(racks), 1)), len(seenRack),
				"%v: racks used", rs)
		}
		requireSpread(t, leaders, "leaders")
		if !racked {
			requireSpread(t, replicas, "replicas")
		}
	})
}

func requireSpread(t *rapid.T, counts map[int32]int, what string) {
	lo, hi := -1, -1
	for _, c := range counts {
		if lo < 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
	}
	require.LessOrEqual(t, hi-lo, 1, "%s spread %v", what, counts)
}
