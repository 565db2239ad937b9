package controller

// Partition reassignment decisions (Kafka's KIP-455, KRaft's PartitionReassignmentReplicas
// and PartitionReassignmentRevert), pure functions of a partition's state.
//
// A reassignment of a partition whose stable replicas are R (its replicas without the
// ones a reassignment in progress is adding) to the target T sets Replicas = T followed
// by R minus T, Adding = T minus R and Removing = R minus T. The adding replicas are
// followers: they fetch from the leader and join the ISR through the leader's
// AlterPartition like any replica that caught up. The reassignment completes when every
// adding replica is in the ISR: Replicas = T, ISR = ISR ∩ T, Adding and Removing empty,
// and a leader that is being removed is replaced by the first replica of T (in replica
// order) in the new ISR that is eligible, in a new leader epoch.

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/meta"
)

// Reassigning says whether a reassignment of the partition is in progress.
func Reassigning(s meta.PartitionState) bool { return len(s.Adding) > 0 || len(s.Removing) > 0 }

// StableReplicas is the partition's replicas without the ones a reassignment in progress
// is adding: what a cancel reverts to, and what a new reassignment starts from.
func StableReplicas(s meta.PartitionState) []int32 {
	return without(s.Replicas, s.Adding)
}

// CheckTarget checks a reassignment's target replicas by Kafka's rules: not empty, no
// broker twice, every broker registered and unfenced. code is
// INVALID_REPLICA_ASSIGNMENT when it is refused.
func CheckTarget(target []int32, eligible func(int32) bool) (code int16, msg string) {
	switch {
	case len(target) == 0:
		return codeInvalidReplicaAssignment, "The target replica list is empty."
	case hasDuplicate(target):
		return codeInvalidReplicaAssignment, fmt.Sprintf(
			"The target replica list %v names a broker more than once.", target)
	}
	for _, id := range target {
		if !eligible(id) {
			return codeInvalidReplicaAssignment, fmt.Sprintf("The target replica list %v "+
				"names broker %d, which is not registered and unfenced.", target, id)
		}
	}
	return 0, ""
}

// Reassign returns the state that starts a reassignment of s to target, or reverts the
// one in progress when cancel is set. A new reassignment replaces one in progress: it
// starts from the stable replicas, and replicas being added that the new target drops
// leave the ISR (and leadership, to the first eligible ISR member in replica order).
// When every replica to add is in the ISR already (a target within the stable
// replicas) the reassignment completes in the same change. changed is false when the
// partition is already as asked; code is non-zero when the request is refused.
func Reassign(s meta.PartitionState, target []int32, cancel bool, eligible func(int32) bool) (
	next meta.PartitionState, changed bool, code int16, msg string) {
	stable := StableReplicas(s)
	next = s.Clone()
	if cancel {
		if !Reassigning(s) {
			return s, false, codeNoReassignment, "No reassignment is in progress."
		}
		next.Replicas, next.Adding, next.Removing = stable, nil, nil
	} else {
		next.Replicas = append(slices.Clone(target), without(stable, target)...)
		next.Adding, next.Removing = without(target, stable), without(stable, target)
	}
	next.ISR = keep(s.ISR, next.Replicas)
	if len(next.ISR) == 0 {
		return s, false, codeInvalidReplicaAssignment, fmt.Sprintf("Every in-sync replica "+
			"of %v is one the reassignment drops: the partition would lose its ISR.", s.ISR)
	}
	if next.Leader != meta.NoLeader && !slices.Contains(next.Replicas, next.Leader) {
		next.Leader = firstEligible(next.Replicas, next.ISR, eligible)
	}
	if done, ok := completeReassignment(next, eligible); ok {
		next = done
	}
	if samePartition(s, next) {
		return s, false, 0, ""
	}
	return bump(s, next), true, 0, ""
}

// CompleteReassignment returns the state that ends s's reassignment, when it can end:
// every replica being added is in the ISR, the ISR keeps a member of the target, and a
// leader being removed has an eligible successor in it. ok is false otherwise (or when
// no reassignment is in progress).
func CompleteReassignment(s meta.PartitionState, eligible func(int32) bool) (
	next meta.PartitionState, ok bool) {
	if !Reassigning(s) {
		return s, false
	}
	done, ok := completeReassignment(s, eligible)
	if !ok {
		return s, false
	}
	return bump(s, done), true
}

// completeReassignment is CompleteReassignment without the epochs.
func completeReassignment(s meta.PartitionState, eligible func(int32) bool) (
	meta.PartitionState, bool) {
	for _, id := range s.Adding {
		if !slices.Contains(s.ISR, id) && !mutantOn("reassign-before-isr") {
			return s, false // still catching up
		}
	}
	next := s.Clone()
	next.Replicas = without(s.Replicas, s.Removing)
	next.ISR = keep(s.ISR, next.Replicas)
	next.Adding, next.Removing = nil, nil
	if len(next.ISR) == 0 {
		return s, false
	}
	if next.Leader != meta.NoLeader && !slices.Contains(next.Replicas, next.Leader) {
		if next.Leader = firstEligible(next.Replicas, next.ISR, eligible); next.Leader ==
			meta.NoLeader {
			return s, false // the leader stays until a successor is eligible
		}
	}
	return next, true
}

// firstEligible is the first of replicas (in their order) in isr and eligible, or
// NoLeader.
func firstEligible(replicas, isr []int32, eligible func(int32) bool) int32 {
	for _, r := range replicas {
		if slices.Contains(isr, r) && eligible(r) {
			return r
		}
	}
	return meta.NoLeader
}

// samePartition compares everything a reassignment changes.
func samePartition(a, b meta.PartitionState) bool {
	return sameState(a, b) && slices.Equal(a.Adding, b.Adding) &&
		slices.Equal(a.Removing, b.Removing)
}

// without returns xs without the members of drop, in xs's order (nil when empty).
func without(xs, drop []int32) []int32 {
	var out []int32
	for _, x := range xs {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// keep returns the members of xs that are in of, in xs's order.
func keep(xs, of []int32) []int32 {
	var out []int32
	for _, x := range xs {
		if slices.Contains(of, x) {
			out = append(out, x)
		}
	}
	return out
}

func hasDuplicate(xs []int32) bool {
	for i := range xs {
		if slices.Contains(xs[i+1:], xs[i]) {
			return true
		}
	}
	return false
}
