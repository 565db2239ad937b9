package broker

// DeleteRecords (API key 21), versions 0–2.
//
// Behaviour: raises each partition's log start offset to the given offset (-1 means
// the high-water mark) durably, then removes whole segments below it. An offset above
// the high-water mark gets OFFSET_OUT_OF_RANGE; one below the current start is a no-op
// that reports the current start as the low watermark.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

func (rm *replicaManager) handleDeleteRecords(m *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range m.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			tp := core.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			rep, code := rm.replicaFor(tp)
			if code == 0 {
				code = rm.checkLeader(tp, -1)
			}
			if code == 0 {
				rp.LowWatermark, code = rep.DeleteRecordsBefore(p.Offset)
			}
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
