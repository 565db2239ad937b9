package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// planCounts is the replicas per broker of parts after moves.
func planCounts(parts []PartitionReplicas, moves []Move) map[int32]int {
	to := map[string][]int32{}
	for _, m := range moves {
		to[fmt.Sprint(m.Topic, "/", m.Partition)] = m.To
	}
	out := map[int32]int{}
	for _, p := range parts {
		reps := p.Replicas
		if t, ok := to[fmt.Sprint(p.Topic, "/", p.Partition)]; ok {
			reps = t
		}
		for _, r := range reps {
			out[r]++
		}
	}
	return out
}

// minMoves is the fewest replicas any plan must move: every replica outside brokers,
// plus, on the brokers, the excess above the targets that leave the larger shares to
// the brokers holding the most.
func minMoves(parts []PartitionReplicas, brokers []int32) int {
	in := map[int32]int{}
	for _, b := range brokers {
		in[b] = 0
	}
	total, outside := 0, 0
	for _, p := range parts {
		for _, r := range p.Replicas {
			total++
			if _, ok := in[r]; ok {
				in[r]++
			} else {
				outside++
			}
		}
	}
	counts := make([]int, 0, len(in))
	for _, c := range in {
		counts = append(counts, c)
	}
	slices.Sort(counts)
	slices.Reverse(counts)
	excess := 0
	for i, c := range counts {
		t := total / len(counts)
		if i < total%len(counts) {
			t++
		}
		excess += max(0, c-t)
	}
	return outside + excess
}

// TestRebalancePlanProperty: over random clusters (some replicas possibly on brokers
// being drained), the plan keeps every partition's replication factor, never names a
// broker twice in a partition, uses only the given brokers, leaves per-broker counts
// within one of each other, and, when no replica is outside the brokers, moves exactly
// the fewest replicas possible (minMoves); with a drain it moves at least that.
func TestRebalancePlanProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nb := rapid.IntRange(1, 7).Draw(t, "brokers")
		var brokers []int32
		for i := 1; i <= nb; i++ {
			brokers = append(brokers, int32(i))
		}
		// Replicas may sit on brokers 1..nb+extra; the extra ones are being drained.
		extra := rapid.IntRange(0, 2).Draw(t, "outside")
		all := nb + extra
		var parts []PartitionReplicas
		for i, n := 0, rapid.IntRange(0, 30).Draw(t, "partitions"); i < n; i++ {
			rf := rapid.IntRange(1, nb).Draw(t, "rf")
			perm := rapid.Permutation(seq(all)).Draw(t, "perm")
			parts = append(parts, PartitionReplicas{Topic: fmt.Sprint("t", i%3),
				Partition: int32(i), Replicas: perm[:rf]})
		}
		moves, err := PlanRebalance(parts, brokers)
		if err != nil {
			t.Fatal(err)
		}
		byKey := map[string]PartitionReplicas{}
		for _, p := range parts {
			byKey[fmt.Sprint(p.Topic, "/", p.Partition)] = p
		}
		changed := 0
		for _, m := range moves {
			p := byKey[fmt.Sprint(m.Topic, "/", m.Partition)]
			if !slices.Equal(p.Replicas, m.From) || len(m.To) != len(m.From) {
				t.Fatalf("move %+v does not keep %v's replication factor", m, p.Replicas)
			}
			seen := map[int32]bool{}
			for s, r := range m.To {
				if seen[r] || r < 1 || int(r) > nb {
					t.Fatalf("move %+v: broker %d twice or not a target", m, r)
				}
				seen[r] = true
				if m.From[s] != r {
					changed++
				}
			}
			if slices.Equal(m.From, m.To) {
				t.Fatalf("move %+v changes nothing", m)
			}
		}
		counts := planCounts(parts, moves)
		lo, hi := -1, 0
		for _, b := range brokers {
			c := counts[b]
			hi = max(hi, c)
			if lo < 0 || c < lo {
				lo = c
			}
		}
		if hi-lo > 1 {
			t.Fatalf("unbalanced after the plan: %v", counts)
		}
		want := minMoves(parts, brokers)
		if extra == 0 && changed != want {
			t.Fatalf("%d replicas moved, the fewest possible is %d", changed, want)
		}
		if changed < want {
			t.Fatalf("%d replicas moved, fewer than the bound %d", changed, want)
		}
		again, err := PlanRebalance(parts, brokers)
		if err != nil || !slices.EqualFunc(again, moves, func(a, b Move) bool {
			return a.Topic == b.Topic && a.Partition == b.Partition && slices.Equal(a.To, b.To)
		}) {
			t.Fatalf("the plan is not a function of its input")
		}
	})
}

func seq(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i + 1)
	}
	return out
}

// TestRebalanceOntoANewBroker: three brokers holding RF 3 partitions and a fourth,
// empty one: a quarter of the replicas move to it, followers first, and a balanced
// cluster needs no move.
func TestRebalanceOntoANewBroker(t *testing.T) {
	var parts []PartitionReplicas
	for i := int32(0); i < 4; i++ {
		parts = append(parts, PartitionReplicas{Topic: "orders", Partition: i,
			Replicas: []int32{1 + i%3, 1 + (i+1)%3, 1 + (i+2)%3}})
	}
	moves, err := PlanRebalance(parts, []int32{1, 2, 3, 4})
	require.NoError(t, err)
	require.Len(t, moves, 3, "12 replicas over 4 brokers: 3 move to broker 4")
	for _, m := range moves {
		require.Contains(t, m.To, int32(4))
		require.Equal(t, m.From[0], m.To[0], "a follower moves, the preferred leader stays")
	}
	require.Equal(t, map[int32]int{1: 3, 2: 3, 3: 3, 4: 3}, planCounts(parts, moves))

	var after []PartitionReplicas
	for _, p := range parts {
		for _, m := range moves {
			if m.Partition == p.Partition {
				p.Replicas = m.To
			}
		}
		after = append(after, p)
	}
	again, err := PlanRebalance(after, []int32{1, 2, 3, 4})
	require.NoError(t, err)
	require.Empty(t, again, "balanced already")
}

// TestRebalanceRefusesTooFewBrokers: a partition with more replicas than brokers cannot
// be placed; no broker at all neither.
func TestRebalanceRefusesTooFewBrokers(t *testing.T) {
	_, err := PlanRebalance([]PartitionReplicas{{Topic: "a", Replicas: []int32{1, 2, 3}}},
		[]int32{1, 2})
	require.ErrorContains(t, err, "3 replicas but there are 2 brokers")
	_, err = PlanRebalance(nil, nil)
	require.Error(t, err)
}
