package controller

import (
	"slices"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// Eligible says whether a broker may lead partitions and be in ISRs: registered and
// unfenced (not fenced, not in controlled shutdown).
func Eligible(im *meta.Image) func(int32) bool {
	return func(id int32) bool {
		b, ok := im.Broker(id)
		return ok && b.State == meta.BrokerUnfenced
	}
}

// Repair returns the state a partition should move to given which brokers are eligible:
// ineligible members leave the ISR, and a leader that is not eligible is replaced by
// the first eligible ISR member in replica order (the preferred replica first). When no
// ISR member is eligible the ISR is kept as it is (each member holds every acknowledged
// record, so any of them may lead cleanly when it comes back) and the partition has no
// leader, unless unclean is set: then the first eligible replica outside the ISR leads,
// alone in the ISR, and the result says the election was unclean (records acknowledged
// by the old ISR may be lost). changed is false when the partition is as it should be;
// otherwise next carries the next partition epoch, and the next leader epoch when the
// leader changed.
func Repair(s meta.PartitionState, eligible func(int32) bool, unclean bool) (
	next meta.PartitionState, wasUnclean, changed bool) {
	return RepairLost(s, Standing{Eligible: eligible, Lost: func(int32) bool { return false },
		Heard: func(int32) bool { return true }}, unclean)
}

// Standing is what the controller knows of the brokers when it repairs a partition.
type Standing struct {
	// Eligible: registered and unfenced (Eligible).
	Eligible func(int32) bool
	// Lost: the registration came with a lost data directory (Lost).
	Lost func(int32) bool
	// Heard: this controller had a heartbeat of the broker's current registration
	// since it became active, on a connection not closed since. One it has not heard
	// from is unfenced only on the session it assumed at activation; its process may be
	// gone (restarted, or wiped) without this controller knowing.
	Heard func(int32) bool
}

// RepairLost is Repair knowing more of the brokers (Standing):
//   - members that lost their storage leave the ISR whenever another member remains,
//     eligible or not, since an ISR place of a broker whose log is gone vouches for
//     nothing; a partition whose every ISR member lost its storage keeps its ISR (it
//     cannot be empty) and stays without a leader, as such a member stays fenced until
//     it is in no ISR (Moved), so only an unclean election brings the partition back;
//   - ineligible members leave the ISR only when an eligible member this controller
//     heard from stays, and a new leader is one it heard from: an ISR does not shrink
//     to, nor is led by, a broker whose unfencing only the assumed session backs (its
//     process may have restarted over an empty disk, and its new registration, which
//     would say so, not be in yet). The partition waits, without a leader if its
//     leader is ineligible, until the broker heartbeats, registers again or is fenced.
//
// (docs/replication.md, "Lost disks").
func RepairLost(s meta.PartitionState, st Standing, unclean bool) (
	next meta.PartitionState, wasUnclean, changed bool) {
	eligible := st.Eligible
	next = s.Clone()
	// Members that lost their storage (fenced, so never eligible) go first, whenever
	// another member remains.
	if kept := filter(s.ISR, func(id int32) bool { return !st.Lost(id) }); len(kept) > 0 &&
		!mutantOn("keeps-wiped-in-isr") {
		next.ISR = kept
	}
	isr := filter(next.ISR, eligible)
	if len(isr) > 0 && (slices.ContainsFunc(isr, st.Heard) ||
		mutantOn("shrinks-isr-to-unheard")) {
		next.ISR = isr
	} // else wait for an eligible member to be heard from, or for any to be eligible
	electable := func(id int32) bool {
		return eligible(id) && (st.Heard(id) || mutantOn("shrinks-isr-to-unheard"))
	}
	if next.Leader == meta.NoLeader || !eligible(next.Leader) {
		next.Leader = meta.NoLeader
		for _, r := range s.Replicas {
			if slices.Contains(isr, r) && electable(r) {
				next.Leader = r
				break
			}
		}
	}
	if next.Leader == meta.NoLeader && unclean {
		for _, r := range s.Replicas {
			if electable(r) {
				next.Leader, next.ISR, wasUnclean = r, []int32{r}, true
				break
			}
		}
	}
	return bump(s, next), wasUnclean, !sameState(s, next)
}

// Preferred returns the state with leadership moved to the preferred replica (the first
// one) when it is not the leader and may lead: eligible and in the ISR. ok is false
// when no election is needed or possible; code then says which (ELECTION_NOT_NEEDED,
// PREFERRED_LEADER_NOT_AVAILABLE).
func Preferred(s meta.PartitionState, eligible func(int32) bool) (
	next meta.PartitionState, ok bool, code int16) {
	p := s.Replicas[0]
	if s.Leader == p {
		return s, false, codeElectionNotNeeded
	}
	if !eligible(p) || !slices.Contains(s.ISR, p) {
		return s, false, codePreferredNotAvailable
	}
	next = s.Clone()
	next.Leader = p
	return bump(s, next), true, 0
}

// Unclean returns the state an unclean election asked by an operator gives (ElectLeaders
// with election type 1, kafka-leader-election.sh --election-type unclean): a partition
// whose leader is eligible needs none (ELECTION_NOT_NEEDED); otherwise RepairLost with
// unclean set, which elects an electable ISR member when there is one, else the first
// electable replica outside the ISR, alone in it (wasUnclean: records acknowledged by
// the old ISR may be lost). ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica can lead.
func Unclean(s meta.PartitionState, st Standing) (next meta.PartitionState, ok,
	wasUnclean bool, code int16) {
	if s.Leader != meta.NoLeader && st.Eligible(s.Leader) {
		return s, false, false, codeElectionNotNeeded
	}
	next, wasUnclean, changed := RepairLost(s, st, !mutantOn("unclean-elect-clean-only"))
	if !changed || next.Leader == meta.NoLeader {
		return s, false, false, codeNoEligibleLeader
	}
	return next, true, wasUnclean, 0
}

// Expired says whether a broker last heard from at last has outlived its session.
func Expired(last, now core.Time, sessionMs int64) bool {
	return now >= last.AddMillis(sessionMs)
}

// ShutdownDone says whether a broker in controlled shutdown is off every partition it
// can leave: it leads none, and it stays in an ISR only where no eligible member could
// replace it (there it is the partition's way back to a clean leader).
func ShutdownDone(im *meta.Image, id int32) bool {
	eligible := Eligible(im)
	for _, name := range im.TopicNames() {
		for _, s := range im.Topic(name).States {
			if s.Leader == id {
				return false
			}
			if slices.Contains(s.ISR, id) && slices.ContainsFunc(s.ISR, eligible) {
				return false
			}
		}
	}
	return true
}

// Moved says whether a fenced broker is off every partition it can leave: it leads none,
// and it stays in an ISR only where no eligible member could replace it (there it is
// the partition's way back to a clean leader, elected in a new epoch when it is
// unfenced). Repair makes it so; ShutdownDone asks the same of a broker shutting down.
// A broker that lost its storage must be in no ISR at all: its ISR places are from a
// log it no longer has, and once unfenced it could be elected from them.
func Moved(im *meta.Image, id int32) bool {
	if b, ok := im.Broker(id); ok && b.StorageLost && !mutantOn("keeps-wiped-in-isr") {
		for _, name := range im.TopicNames() {
			for _, s := range im.Topic(name).States {
				if s.Leader == id || slices.Contains(s.ISR, id) {
					return false
				}
			}
		}
		return true
	}
	return ShutdownDone(im, id)
}

// Lost says whether a broker's registration lost its storage (meta.Broker.StorageLost).
func Lost(im *meta.Image) func(int32) bool {
	return func(id int32) bool {
		b, ok := im.Broker(id)
		return ok && b.StorageLost
	}
}

// bump sets next's epochs from s: the partition epoch one more, the leader epoch one
// more when the leader changed.
func bump(s, next meta.PartitionState) meta.PartitionState {
	next.PartitionEpoch = s.PartitionEpoch + 1
	next.LeaderEpoch = s.LeaderEpoch
	if next.Leader != s.Leader {
		next.LeaderEpoch = s.LeaderEpoch + 1
	}
	return next
}

func sameState(a, b meta.PartitionState) bool {
	return a.Leader == b.Leader && slices.Equal(a.ISR, b.ISR) &&
		slices.Equal(a.Replicas, b.Replicas)
}

func filter(xs []int32, keep func(int32) bool) []int32 {
	var out []int32
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}
