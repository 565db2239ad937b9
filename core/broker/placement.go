package broker

// Hosting partitions by their placement, and the role of each hosted replica.
//
// A partition of an assigned topic (its TopicCreated carried partition states,
// docs/controller.md) is hosted by the nodes in its replicas, led by its leader in its
// leader epoch; the others follow. A partition of an unassigned topic (a single node's
// data directory) is hosted and led here in epoch 0, as before placement existed: none
// of this touches it.
//
// The replica manager opens a log when this node joins a partition's replicas (its
// creation, or a PartitionChange adding it) and closes and removes it when the node
// leaves them, as a topic deletion does. The role follows the image: leader == this
// node → BecomeLeader(leader epoch), the ISR set from the image (the maximal ISR while
// an expansion is pending, isr_changes.go) and the followers' tracking started afresh;
// otherwise BecomeFollower(leader epoch) and the fetcher told whom to follow. Roles are
// applied when a record changes a partition, at Start once the replay is done, and when
// a queued log finishes opening (open_queue.go).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
)

// partitionRole is the role last applied to a hosted replica of an assigned partition.
type partitionRole struct {
	leader      int32 // the leader it was applied for (meta.NoLeader: none)
	leaderEpoch int32
}

// hostedHere says whether this node hosts tp by the image: every partition of an
// unassigned topic, a partition of an assigned one when this node is in its replicas.
func (n *node) hostedHere(tp core.TopicPartition) bool {
	s, assigned, ok := n.image.Partition(tp.Topic, tp.Partition)
	if !ok {
		return false
	}
	return !assigned || slices.Contains(s.Replicas, n.cfg.NodeID)
}

// assignedState returns tp's state when tp is a partition of an assigned topic.
func (n *node) assignedState(tp core.TopicPartition) (meta.PartitionState, bool) {
	s, assigned, ok := n.image.Partition(tp.Topic, tp.Partition)
	return s, ok && assigned
}

// holds says whether the replica manager has tp open, queued or failed to open it.
func (rm *replicaManager) holds(tp core.TopicPartition) bool {
	_, failed := rm.openErrs[tp]
	return rm.replicas[tp] != nil || rm.opening(tp) || failed
}

// partitionChanged brings tp in line with a PartitionChange just applied: opens its
// log when this node joined the replicas, removes it when it left, else applies the
// role. At the Start replay, leave is the replay's verdict (replay): a node that left
// and joined again later in the log keeps the log it holds now.
func (rm *replicaManager) partitionChanged(tp core.TopicPartition, leave bool) {
	switch here := rm.hostedHere(tp); {
	case here && !rm.holds(tp):
		rm.hit(pPlacementJoined)
		rm.queueOpen(tp)
		if rm.opens.live {
			rm.openSome()
		}
	case !here && rm.holds(tp) && leave:
		rm.hit(pPlacementLeft)
		rm.lg.Info("replica moved off this node", zap.Stringer("tp", tp))
		rm.removeReplica(tp)
	case here && rm.opens.live:
		rm.applyRole(tp)
	}
}

// applyRoles applies every hosted assigned partition's role, in partition order (at
// Start, after the replay).
func (rm *replicaManager) applyRoles() {
	for _, tp := range rm.sortedPartitions() {
		rm.applyRole(tp)
	}
}

// applyRole makes tp's hosted replica lead or follow as the image says. Unassigned
// partitions are left alone: they lead in epoch 0 as they always did.
func (rm *replicaManager) applyRole(tp core.TopicPartition) {
	rep := rm.replicas[tp]
	s, assigned := rm.assignedState(tp)
	if rep == nil || !assigned {
		return
	}
	if rm.roles == nil {
		rm.roles = map[core.TopicPartition]partitionRole{}
	}
	prev, known := rm.roles[tp]
	changed := !known || prev.leader != s.Leader || prev.leaderEpoch != s.LeaderEpoch
	rm.roles[tp] = partitionRole{leader: s.Leader, leaderEpoch: s.LeaderEpoch}
	defer rm.checkRole(tp, rep, s)
	defer rm.offsetsRole(tp, rep, s)
	if s.Leader == rm.cfg.NodeID && !rm.mayLead() {
		rm.awaitUnfenced(tp, rep, s)
		return
	}
	if s.Leader == rm.cfg.NodeID {
		rm.lead(tp, rep, s, changed)
		return
	}
	if !rep.Follower() || changed {
		rm.follower(tp, rep, s.LeaderEpoch)
	}
	if !changed {
		return
	}
	if s.Leader == meta.NoLeader {
		rm.unfollow(tp)
		return
	}
	rm.follow(tp, s.Leader, s.LeaderEpoch)
}

// awaitUnfenced keeps rep a follower of no one while the image names this node its
// leader but this incarnation is not unfenced yet (membership.go). Its role is left
// unrecorded, so that the gate's opening applies it as a new one.
func (rm *replicaManager) awaitUnfenced(tp core.TopicPartition, rep *replica.Replica,
	s meta.PartitionState) {
	delete(rm.roles, tp)
	if !rep.Follower() {
		rm.follower(tp, rep, s.LeaderEpoch)
	}
	rm.unfollow(tp)
}

// lead makes rep the leader of tp in s's epoch (newEpoch: the leader or its epoch just
// changed) and sets its ISR from the image.
func (rm *replicaManager) lead(tp core.TopicPartition, rep *replica.Replica,
	s meta.PartitionState, newEpoch bool) {
	if newEpoch || rep.Follower() {
		if rep.Follower() {
			rm.unfollow(tp)
		}
		if err := rep.BecomeLeader(s.LeaderEpoch); err != nil {
			// The log holds a newer epoch than the image's: it cannot lead in this one.
			// It serves nothing as leader until a newer epoch comes.
			rm.lg.Error("cannot lead partition", zap.Stringer("tp", tp), zap.Error(err))
			rm.follower(tp, rep, s.LeaderEpoch)
			return
		}
		rm.hit(pPlacementLead)
		rm.lg.Info("leading partition", zap.Stringer("tp", tp),
			zap.Int32("leader_epoch", s.LeaderEpoch), zap.Int32s("isr", s.ISR))
		rm.dropAlter(tp) // one in flight was for the previous epoch
	}
	rm.supersedeAlter(tp, s)
	isr := rm.maximalISR(tp, s)
	if mutantOn("hwm-ignores-isr") {
		isr = nil
	}
	moved := rep.SetISR(isr)
	if newEpoch {
		rm.resetHeld(tp)
		rep.ResetFollowers(others(s.Replicas, rm.cfg.NodeID), rm.now.Millis())
		rm.armISRCheck()
	}
	if moved {
		rm.hwmAdvanced(tp)
	}
}

// follower makes rep a follower in epoch. If it led, its leadership ends here: the
// acks=all produces waiting on it are answered NOT_LEADER_OR_FOLLOWER (the new leader
// may not have their batches), as Kafka answers its delayed produces, and parked
// fetches are answered (with the same error). An ISR change in flight is forgotten.
func (rm *replicaManager) follower(tp core.TopicPartition, rep *replica.Replica,
	epoch int32) {
	rm.dropAlter(tp)
	led := !rep.Follower()
	rep.BecomeFollower(epoch)
	if led {
		rm.hit(pPlacementResign)
		rm.partitionFailed(tp, kerr.NotLeaderForPartition.Code)
	}
}

// offsetsRole tells the group coordinator the role just applied to an offsets
// partition (groups_load.go): it coordinates the partition's groups while it leads.
func (rm *replicaManager) offsetsRole(tp core.TopicPartition, rep *replica.Replica,
	s meta.PartitionState) {
	if tp.Topic != group.OffsetsTopic {
		return
	}
	rm.post(msgOffsetsRole{tp: tp, leading: !rep.Follower() && s.Leader == rm.cfg.NodeID,
		epoch: s.LeaderEpoch})
}

// others returns ids without self.
func others(ids []int32, self int32) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if id != self {
			out = append(out, id)
		}
	}
	return out
}

// checkRole asserts B12 after a role was applied: a replica of an assigned partition
// leads only when the image names this node its leader, in the image's leader epoch.
func (rm *replicaManager) checkRole(tp core.TopicPartition, rep *replica.Replica,
	s meta.PartitionState) {
	if rep.Follower() {
		return
	}
	core.Invariant(s.Leader == rm.cfg.NodeID && rep.LeaderEpoch() == s.LeaderEpoch, "B12",
		"%s leads in epoch %d; the image says leader %d epoch %d", tp, rep.LeaderEpoch(),
		s.Leader, s.LeaderEpoch)
	core.Invariant(rm.mayLead(), "B12", "%s leads before this incarnation is unfenced", tp)
}

// resetHeld starts tp's record of what its followers reported (B13) afresh, as a new
// leadership starts.
func (rm *replicaManager) resetHeld(tp core.TopicPartition) {
	if rm.held == nil {
		rm.held = map[core.TopicPartition]map[int32]int64{}
	}
	rm.held[tp] = map[int32]int64{}
}

// noteHeld records that follower id reported holding tp up to offset (B13): its latest
// report, which may be lower than an earlier one (a lost disk, a truncation).
func (rm *replicaManager) noteHeld(tp core.TopicPartition, id int32, offset int64) {
	if m := rm.held[tp]; m != nil {
		m[id] = offset
	}
}

// checkHeld asserts B13 when tp's high-water mark moved: it is not past what any
// member of the committed ISR reported holding, among those that fetched from this
// leader.
func (rm *replicaManager) checkHeld(tp core.TopicPartition, rep *replica.Replica) {
	s, assigned := rm.assignedState(tp)
	if !assigned || s.Leader != rm.cfg.NodeID || rep.Follower() {
		return
	}
	for _, id := range s.ISR {
		if held, ok := rm.held[tp][id]; ok && id != rm.cfg.NodeID {
			core.Invariant(rep.HighWatermark() <= held, "B13",
				"%s high-water mark %d past %d, what ISR member %d holds", tp,
				rep.HighWatermark(), held, id)
		}
	}
}
