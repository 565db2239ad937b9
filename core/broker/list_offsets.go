package broker

// ListOffsets (API key 2), versions 1–7. CurrentLeaderEpoch (v4+) is checked as in
// OffsetForLeaderEpoch.
//
// Behaviour, as in Kafka: timestamp -2 → log start offset; -1 → high-water mark (also
// the last stable offset: there are no open transactions yet); -3 (v7, MAX_TIMESTAMP) →
// the record with the largest timestamp, the earliest among ties; any value ≥ 0 → the
// first record, in offset order, whose timestamp is at or after it, with that record's
// timestamp, or offset -1 and timestamp -1 when there is none. A record's timestamp is
// its batch's first timestamp plus its delta, or the batch's max timestamp under
// LogAppendTime. Lookups by time look inside the one batch the time index points at,
// decompressing it with the injected Decompressor; they search only below the
// high-water mark and never answer an offset below the log start offset.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

func (rm *replicaManager) handleListOffsets(m *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range m.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, leaderEpoch
			tp := core.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			rp.ErrorCode = rm.listOffset(tp, p.Timestamp, p.CurrentLeaderEpoch, &rp)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (rm *replicaManager) listOffset(tp core.TopicPartition, ts int64, currentEpoch int32,
	rp *kmsg.ListOffsetsResponseTopicPartition) int16 {
	rep, code := rm.replicaFor(tp)
	if code != 0 {
		return code
	}
	if rep.Offline() {
		return kerr.KafkaStorageError.Code
	}
	if code := rm.checkLeader(tp, currentEpoch); code != 0 {
		return code
	}
	rp.LeaderEpoch = rm.partitionLeaderEpoch(tp)
	switch {
	case ts == -2:
		rp.Offset = rep.StartOffset()
	case ts == -1:
		rp.Offset = rep.HighWatermark()
	case ts == -3:
		rm.hit(pListMaxTimestamp)
		m, found, code := rep.MaxTimestamp(rm.dec)
		if code != 0 {
			return code
		}
		if found {
			rp.Offset, rp.Timestamp = m.Offset, m.Timestamp
		}
	case ts >= 0:
		rm.hit(pListByTime)
		m, found, code := rep.OffsetForTimestamp(ts, rm.dec)
		if code != 0 {
			return code
		}
		if found {
			rp.Offset, rp.Timestamp = m.Offset, m.Timestamp
		}
	default:
		return kerr.InvalidRequest.Code
	}
	return 0
}
