package broker

// OffsetForLeaderEpoch (API key 23), versions 0–4.
//
// Behaviour: consumers (KIP-320) and, with replication, followers ask where a leader
// epoch ended, to detect that the log was truncated under their position. The answer
// comes from the replica's leader-epoch cache (core/replica/epochs.go): the largest
// epoch not newer than the one asked and the offset where it ended (the log end for
// the latest epoch); an epoch newer than the latest is unknown (-1, -1), as in Kafka.
// A single node leads every partition in epoch 0 (stamped into every batch it appends
// and reported by Metadata), so today epoch 0 ends at the log end offset. The request's
// CurrentLeaderEpoch (v2+) is checked as in Fetch and ListOffsets: newer than the
// leader's gets UNKNOWN_LEADER_EPOCH, older gets FENCED_LEADER_EPOCH, -1 skips it.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

// leaderEpoch is the epoch this node leads every partition in.
const leaderEpoch int32 = 0

// checkCurrentLeaderEpoch validates a client's idea of the leader epoch of an
// unassigned partition (leader.go has the assigned ones').
func checkCurrentLeaderEpoch(current int32) int16 {
	return checkLeaderEpoch(current, leaderEpoch)
}

func (rm *replicaManager) handleOffsetForLeaderEpoch(
	m *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range m.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.EndOffset = p.Partition, -1, -1
			rp.ErrorCode = rm.epochEnd(core.TopicPartition{Topic: t.Topic, Partition: p.Partition}, p, &rp)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (rm *replicaManager) epochEnd(tp core.TopicPartition,
	p kmsg.OffsetForLeaderEpochRequestTopicPartition,
	rp *kmsg.OffsetForLeaderEpochResponseTopicPartition) int16 {
	rep, code := rm.replicaFor(tp)
	if code != 0 {
		return code
	}
	if rep.Offline() {
		return kerr.KafkaStorageError.Code
	}
	if code := rm.checkLeader(tp, p.CurrentLeaderEpoch); code != 0 {
		return code
	}
	rp.LeaderEpoch, rp.EndOffset = rep.EndOffsetForEpoch(p.LeaderEpoch)
	if rp.LeaderEpoch == p.LeaderEpoch {
		rm.hit(pEpochMatched)
	}
	return 0
}
