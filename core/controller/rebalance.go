package controller

import (
	"cmp"
	"fmt"
	"slices"
)

// PlanRebalance is `sluice topic reassign --rebalance`'s plan (docs/operations.md,
// "Adding a broker and moving partitions"): the reassignments that spread the replicas
// of parts evenly over brokers, each broker ending with as many replicas as any other,
// ±1. Every replica on a broker outside brokers moves (a drain); otherwise the plan
// moves the fewest replicas that reach the balance: only replicas above a broker's
// target, each straight to a broker below its target. A moved replica takes the slot
// it leaves, so the preferred leader changes only when the preferred replica moves,
// which the plan avoids while a follower of the broker can move instead. Partitions
// keep their replication factor and never get a broker twice. The plan is a pure
// function of its input (ties go to the lower broker id, then topic and partition).
func PlanRebalance(parts []PartitionReplicas, brokers []int32) ([]Move, error) {
	if len(brokers) == 0 {
		return nil, fmt.Errorf("no broker to place replicas on")
	}
	p := newPlanner(parts, brokers)
	for _, pr := range p.parts {
		if len(pr.Replicas) > len(brokers) {
			return nil, fmt.Errorf("%s-%d has %d replicas but there are %d brokers",
				pr.Topic, pr.Partition, len(pr.Replicas), len(brokers))
		}
	}
	p.drain()
	p.balance()
	return p.moves(), nil
}

// PartitionReplicas is one partition's replicas, the preferred leader first.
type PartitionReplicas struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// Move is one partition's reassignment: its replicas From now, To after the move.
type Move struct {
	Topic     string
	Partition int32
	From, To  []int32
}

type planner struct {
	parts  []PartitionReplicas // sorted by topic and partition
	next   [][]int32           // each partition's replicas as planned
	ids    []int32             // the brokers, ascending
	count  map[int32]int       // replicas planned per broker of ids
	target map[int32]int
}

func newPlanner(parts []PartitionReplicas, brokers []int32) *planner {
	p := &planner{parts: slices.Clone(parts), ids: slices.Clone(brokers),
		count: map[int32]int{}, target: map[int32]int{}}
	slices.SortFunc(p.parts, func(a, b PartitionReplicas) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	slices.Sort(p.ids)
	p.ids = slices.Compact(p.ids)
	total := 0
	for _, id := range p.ids {
		p.count[id] = 0
	}
	for _, pr := range p.parts {
		p.next = append(p.next, slices.Clone(pr.Replicas))
		total += len(pr.Replicas)
		for _, r := range pr.Replicas {
			if _, ok := p.count[r]; ok {
				p.count[r]++
			}
		}
	}
	// The brokers holding the most keep the larger share: fewest moves.
	byLoad := slices.Clone(p.ids)
	slices.SortStableFunc(byLoad, func(a, b int32) int { return p.count[b] - p.count[a] })
	k := len(p.ids)
	for i, id := range byLoad {
		p.target[id] = total / k
		if i < total%k {
			p.target[id]++
		}
	}
	return p
}

// drain moves every replica on a broker outside the set, to the broker furthest below
// its target (then the least loaded) that the partition does not use yet.
func (p *planner) drain() {
	for i, reps := range p.next {
		for s, r := range reps {
			if _, ok := p.count[r]; ok {
				continue
			}
			to := int32(-1)
			for _, id := range p.ids {
				if slices.Contains(reps, id) {
					continue
				}
				if to < 0 || p.below(id) > p.below(to) ||
					(p.below(id) == p.below(to) && p.count[id] < p.count[to]) {
					to = id
				}
			}
			reps[s] = to // a broker is free: the replication factor is at most len(ids)
			p.count[to]++
			p.next[i] = reps
		}
	}
}

// below is how many replicas id lacks to reach its target (negative: above it).
func (p *planner) below(id int32) int { return p.target[id] - p.count[id] }

// balance moves replicas from brokers above their target to brokers below it until
// none is above. Such a move always exists: a broker above its target holds more
// replicas than one below it, so one of its partitions lacks the other.
func (p *planner) balance() {
	for {
		moved := false
		for _, from := range p.ids {
			if p.below(from) >= 0 {
				continue
			}
			for _, to := range p.ids {
				if p.below(to) > 0 && p.moveOne(from, to) {
					moved = true
					break
				}
			}
		}
		if !moved {
			return
		}
	}
}

// moveOne moves one replica of from to to, in a partition holding from and not to: a
// follower slot first, the preferred leader's only if no follower can move.
func (p *planner) moveOne(from, to int32) bool {
	for _, leaderSlot := range []bool{false, true} {
		for i, reps := range p.next {
			s := slices.Index(reps, from)
			if s < 0 || (s == 0) != leaderSlot || slices.Contains(reps, to) {
				continue
			}
			reps[s] = to
			p.count[from]--
			p.count[to]++
			p.next[i] = reps
			return true
		}
	}
	return false
}

func (p *planner) moves() []Move {
	var out []Move
	for i, pr := range p.parts {
		if !slices.Equal(pr.Replicas, p.next[i]) {
			out = append(out, Move{Topic: pr.Topic, Partition: pr.Partition,
				From: slices.Clone(pr.Replicas), To: p.next[i]})
		}
	}
	return out
}
