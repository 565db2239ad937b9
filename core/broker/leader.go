package broker

// Which replica may serve a client.
//
// Produce, a consumer's Fetch, ListOffsets, DeleteRecords and OffsetForLeaderEpoch are
// served by a partition's leader only. For a partition of an assigned topic this node
// must be the leader the image names (placement.go); a node that hosts a follower, or
// does not host the partition at all, answers NOT_LEADER_OR_FOLLOWER so that the client
// refreshes its metadata, as Kafka's ReplicaManager does. A request's
// CurrentLeaderEpoch is checked first, against the partition's leader epoch:
// older → FENCED_LEADER_EPOCH, newer → UNKNOWN_LEADER_EPOCH, -1 → not checked (Kafka's
// Partition.getLocalLog order). Unassigned partitions lead here in epoch 0, as before.

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/replica"
)

// checkLeaderEpoch validates a client's idea of the leader epoch against epoch.
func checkLeaderEpoch(current, epoch int32) int16 {
	switch {
	case current == -1 || current == epoch,
		mutantOn("leader-epoch-inverted") && current < epoch:
		return 0
	case current > epoch:
		return kerr.UnknownLeaderEpoch.Code
	default:
		return kerr.FencedLeaderEpoch.Code
	}
}

// partitionLeaderEpoch is the leader epoch clients are told for tp: the image's for an
// assigned partition, else the epoch this node leads every unassigned one in.
func (n *node) partitionLeaderEpoch(tp core.TopicPartition) int32 {
	if s, ok := n.assignedState(tp); ok {
		return s.LeaderEpoch
	}
	return leaderEpoch
}

// checkLeader is what a leader-only request on a hosted replica of tp must pass: the
// client's CurrentLeaderEpoch (-1: not checked), then, for an assigned partition, that
// this node leads it.
func (rm *replicaManager) checkLeader(tp core.TopicPartition, current int32) int16 {
	s, assigned := rm.assignedState(tp)
	if !assigned {
		return checkCurrentLeaderEpoch(current)
	}
	if code := checkLeaderEpoch(current, s.LeaderEpoch); code != 0 {
		return code
	}
	if (s.Leader != rm.cfg.NodeID || !rm.mayLead()) && !mutantOn("follower-serves-clients") {
		rm.hit(pNotLeader)
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

// notHostedCode is the answer for a partition of an assigned topic that this node does
// not host: another node's.
func (rm *replicaManager) notHostedCode(tp core.TopicPartition) (int16, bool) {
	if _, assigned := rm.assignedState(tp); !assigned || rm.hostedHere(tp) {
		return 0, false
	}
	rm.hit(pNotLeader)
	return kerr.NotLeaderForPartition.Code, true
}

// enoughInSync says whether an acks=all produce to tp may be appended: the in-sync
// replicas are at least min.insync.replicas. For an assigned partition they are the
// committed ISR (Kafka's partitionState.isr), else the replica's count (one).
func (rm *replicaManager) enoughInSync(tp core.TopicPartition, rep *replica.Replica) bool {
	s, assigned := rm.assignedState(tp)
	if !assigned {
		return rep.EnoughInSync()
	}
	return int64(len(s.ISR)) >= rm.topicConfigInt(rm.image.Topic(tp.Topic),
		"min.insync.replicas")
}

// enoughAfterAppend says whether an acks=all batch the high-water mark just passed may
// be acknowledged: for an assigned partition, the ISR still has min.insync.replicas
// members (else NOT_ENOUGH_REPLICAS_AFTER_APPEND).
func (rm *replicaManager) enoughAfterAppend(tp core.TopicPartition) bool {
	s, assigned := rm.assignedState(tp)
	if !assigned {
		return true
	}
	return int64(len(s.ISR)) >= rm.topicConfigInt(rm.image.Topic(tp.Topic),
		"min.insync.replicas")
}
