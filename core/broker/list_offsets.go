package broker

// ListOffsets (API key 2), versions 1–7.
//
// Behaviour: timestamp -2 → log start offset; -1 → high-water mark (also the last
// stable offset: there are no open transactions yet); -3 (v7) → the batch with the
// largest timestamp; any other value ≥ 0 → the first batch whose max timestamp is at
// or after it, or offset -1 when there is none. Lookups by time resolve to a batch's
// base offset: Sluice does not decompress batches to find the exact record, so a
// consumer may see a few records older than the timestamp asked for.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

func (b *Broker) handleListOffsets(m *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range m.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, 0
			tp := core.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			rp.ErrorCode = b.listOffset(tp, p.Timestamp, &rp)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) listOffset(tp core.TopicPartition, ts int64,
	rp *kmsg.ListOffsetsResponseTopicPartition) int16 {
	rep, code := b.replicaFor(tp)
	if code != 0 {
		return code
	}
	if rep.Offline() {
		return kerr.KafkaStorageError.Code
	}
	switch {
	case ts == -2:
		rp.Offset = rep.StartOffset()
	case ts == -1:
		rp.Offset = rep.HighWatermark()
	case ts == -3:
		rp.Timestamp, rp.Offset = rep.MaxTimestamp()
	case ts >= 0:
		off, found, code := rep.OffsetForTimestamp(ts)
		if code != 0 {
			return code
		}
		if found {
			rp.Offset, rp.Timestamp = off, ts
		}
	default:
		return kerr.InvalidRequest.Code
	}
	return 0
}
