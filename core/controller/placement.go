package controller

import (
	"fmt"
	"slices"
	"sort"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// Place assigns replicas for count new partitions of a topic over the eligible brokers
// (the others are never chosen), replicationFactor each, starting at a random broker
// so that topics do not all lead on the same one. Leaders go round-robin over the
// brokers in rack-alternating order (one broker of each rack in turn), so partition
// leaders spread evenly (±1) and consecutive leaders sit in different racks. Each
// follower is the least loaded broker (counting every leader of the topic first) in a
// rack the partition does not use yet, while one is left (then any rack), ties going to
// the next in that order after the leader; without racks every broker then holds as
// many replicas as any other, ±1 (TestPlacementProperty).
// It refuses a replication factor below 1 or above the number of eligible brokers
// (INVALID_REPLICATION_FACTOR).
func Place(brokers []meta.Broker, count int32, replicationFactor int16, rnd core.Rand) (
	[][]int32, int16, string) {
	order := rackAlternating(brokers)
	n := len(order)
	if code, msg := CheckReplicationFactor(replicationFactor, n); code != 0 {
		return nil, code, msg
	}
	if count < 1 {
		return nil, codeInvalidPartitions, fmt.Sprintf("%d partitions", count)
	}
	// load counts the replicas each position in order will hold: every partition's
	// leader first, so followers go where leaders will not.
	load := make([]int, n)
	start := rnd.Intn(n)
	for p := range int(count) {
		load[(start+p)%n]++
	}
	out := make([][]int32, count)
	for p := range int(count) {
		lead := (start + p) % n
		picked := []int{lead}
		for len(picked) < int(replicationFactor) {
			f := pickFollower(order, load, picked, lead)
			picked = append(picked, f)
			load[f]++
		}
		ids := make([]int32, len(picked))
		for i, pos := range picked {
			ids[i] = order[pos].ID
		}
		out[p] = ids
	}
	return out, 0, ""
}

// CheckReplicationFactor refuses a replication factor below 1 or above the number of
// live brokers (INVALID_REPLICATION_FACTOR), with the reason.
func CheckReplicationFactor(rf int16, live int) (int16, string) {
	if rf < 1 {
		return codeInvalidReplication, fmt.Sprintf("Replication factor must be larger "+
			"than 0, not %d.", rf)
	}
	if int(rf) > live {
		return codeInvalidReplication, fmt.Sprintf("Unable to replicate the partition "+
			"%d time(s): the target replication factor of %d cannot be reached because "+
			"only %d broker(s) are live (registered and unfenced).", rf, rf, live)
	}
	return 0, ""
}

// pickFollower returns the position of the next follower: not picked yet, in a rack not
// used yet if one is left, least loaded, then nearest after the leader.
func pickFollower(order []meta.Broker, load, picked []int, lead int) int {
	n := len(order)
	used := map[string]bool{}
	for _, pos := range picked {
		used[order[pos].Rack] = true
	}
	freshRack := false
	for i := range order {
		if !slices.Contains(picked, i) && !used[order[i].Rack] {
			freshRack = true
		}
	}
	best := -1
	for d := 1; d < n; d++ {
		i := (lead + d) % n
		if slices.Contains(picked, i) || (freshRack && used[order[i].Rack]) {
			continue
		}
		if best < 0 || load[i] < load[best] {
			best = i
		}
	}
	core.Invariant(best >= 0, "C8", "placement: no follower left for %d picked of %d",
		len(picked), n)
	return best
}

// rackAlternating orders brokers by id within each rack, then takes one of each rack in
// turn (racks in name order): r1a, r2a, r1b, r2b, ... Without racks it is id order.
func rackAlternating(brokers []meta.Broker) []meta.Broker {
	byRack := map[string][]meta.Broker{}
	var racks []string
	for _, b := range brokers {
		if _, ok := byRack[b.Rack]; !ok {
			racks = append(racks, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	sort.Strings(racks)
	for _, r := range racks {
		sort.Slice(byRack[r], func(i, j int) bool { return byRack[r][i].ID < byRack[r][j].ID })
	}
	out := make([]meta.Broker, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}

// EligibleBrokers returns the brokers Place may use: registered and unfenced, by id.
func EligibleBrokers(im *meta.Image) []meta.Broker {
	var out []meta.Broker
	for _, b := range im.Brokers() {
		if b.State == meta.BrokerUnfenced {
			out = append(out, b)
		}
	}
	return out
}

// NewPartitionStates returns the states of freshly placed partitions: the first replica
// leads, every replica is in the ISR (a new partition is empty), epochs 0.
func NewPartitionStates(assignments [][]int32) []meta.PartitionState {
	out := make([]meta.PartitionState, len(assignments))
	for i, a := range assignments {
		out[i] = meta.PartitionState{Replicas: slices.Clone(a), ISR: slices.Clone(a),
			Leader: a[0]}
	}
	return out
}
