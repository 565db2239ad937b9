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
//
// A new leader's high-water mark lags until its followers have fetched from it: until it
// reaches the start of the leader's epoch, a client's (ReplicaID < 0) request for the
// latest offset, or a lookup by time that finds nothing below it, gets
// OFFSET_NOT_AVAILABLE (v5+; LEADER_NOT_AVAILABLE before), which clients retry, rather
// than an offset below one the previous leader already answered (KIP-207). Followers
// (ReplicaID >= 0) are answered as before.

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
			if rp.ErrorCode == 0 && m.ReplicaID < 0 && rm.offsetsNotAvailable(tp, p.Timestamp, &rp) {
				rp.ErrorCode = kerr.OffsetNotAvailable.Code
				if m.Version < 5 {
					rp.ErrorCode = kerr.LeaderNotAvailable.Code
				}
				rp.Timestamp, rp.Offset = -1, -1
			}
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

// offsetsNotAvailable reports whether a client's answer rp for timestamp ts must wait:
// this leader's high-water mark is still below the start of its leader epoch, and the
// answer is the latest offset or a lookup by time that found nothing below it (KIP-207).
func (rm *replicaManager) offsetsNotAvailable(tp core.TopicPartition, ts int64,
	rp *kmsg.ListOffsetsResponseTopicPartition) bool {
	if ts != -1 && (ts < 0 || rp.Offset >= 0) {
		return false
	}
	rep, code := rm.replicaFor(tp)
	if code != 0 || rep.Follower() || mutantOn("list-offsets-lagging-hwm") {
		return false
	}
	start, ok := rep.LeaderEpochStart()
	if ok && rep.HighWatermark() < start {
		rm.hit(pListLaggingHWM)
		return true
	}
	return false
}
