package broker

// OffsetFetch (API key 9), versions 0–8.
//
// Behaviour: returns a group's committed offsets: the requested partitions, or every
// partition the group has offsets for when Topics is null (v2+). A partition without a
// committed offset — including every partition of a group that does not exist — gets
// offset -1, empty metadata and no error, which clients read as "use
// auto.offset.reset". Only durable commits are visible, so RequireStable (v7) never
// needs UNSTABLE_OFFSET_COMMIT (there are no transactional commits yet). v8 batches
// groups. Errors: COORDINATOR_NOT_AVAILABLE while the group's offsets partition is
// offline — top level from v2, per group in v8, per partition before v2.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/group"
)

// fetchedTopic is one topic of an OffsetFetch answer, independent of the version's
// response shape.
type fetchedTopic struct {
	topic string
	parts []fetchedPartition
}

type fetchedPartition struct {
	partition int32
	offset    group.Offset
	code      int16
}

func (gc *groupCoordinator) handleOffsetFetch(
	m *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := m.ResponseKind().(*kmsg.OffsetFetchResponse)
	if m.Version >= 8 {
		for _, rg := range m.Groups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			var topics []fetchedTopic
			topics, g.ErrorCode = gc.fetchOffsets(rg.Group, groupTopics(rg.Topics))
			g.Topics = v8Topics(topics)
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
	var want []fetchedTopic
	if m.Topics != nil {
		want = []fetchedTopic{}
		for _, t := range m.Topics {
			want = append(want, requested(t.Topic, t.Partitions))
		}
	}
	topics, code := gc.fetchOffsets(m.Group, want)
	if code != 0 && m.Version < 2 {
		topics = want // no top-level error field: report it on every partition
		for i := range topics {
			for j := range topics[i].parts {
				topics[i].parts[j].code = code
			}
		}
	}
	resp.ErrorCode = code
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.topic
		for _, p := range t.parts {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.partition, p.code
			rp.Offset, rp.LeaderEpoch = p.offset.Offset, p.offset.LeaderEpoch
			rp.Metadata = strp(p.offset.Metadata)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func groupTopics(ts []kmsg.OffsetFetchRequestGroupTopic) []fetchedTopic {
	if ts == nil {
		return nil
	}
	want := []fetchedTopic{}
	for _, t := range ts {
		want = append(want, requested(t.Topic, t.Partitions))
	}
	return want
}

func requested(topic string, partitions []int32) fetchedTopic {
	ft := fetchedTopic{topic: topic}
	for _, p := range partitions {
		ft.parts = append(ft.parts, fetchedPartition{partition: p,
			offset: group.Offset{Offset: -1, LeaderEpoch: -1}})
	}
	return ft
}

// fetchOffsets fills want (nil: every committed offset of the group) and returns it
// with a group-level error code.
func (gc *groupCoordinator) fetchOffsets(groupID string, want []fetchedTopic) ([]fetchedTopic,
	int16) {
	if code := gc.coordinatorCode(groupID); code != 0 && !(code ==
		kerr.CoordinatorLoadInProgress.Code && mutantOn("offset-fetch-while-loading")) {
		return nil, code
	}
	if want == nil {
		return gc.allOffsets(groupID), 0
	}
	for i := range want {
		for j := range want[i].parts {
			p := &want[i].parts[j]
			tp := core.TopicPartition{Topic: want[i].topic, Partition: p.partition}
			if o, ok := gc.groups.coord.Offset(groupID, tp); ok {
				p.offset = o
			}
		}
	}
	return want, 0
}

// allOffsets lists every committed offset of a group, grouped by topic in order.
func (gc *groupCoordinator) allOffsets(groupID string) []fetchedTopic {
	var out []fetchedTopic
	for _, po := range gc.groups.coord.Offsets(groupID) {
		if len(out) == 0 || out[len(out)-1].topic != po.TP.Topic {
			out = append(out, fetchedTopic{topic: po.TP.Topic})
		}
		last := &out[len(out)-1]
		last.parts = append(last.parts, fetchedPartition{partition: po.TP.Partition,
			offset: po.Offset})
	}
	return out
}

func v8Topics(topics []fetchedTopic) []kmsg.OffsetFetchResponseGroupTopic {
	var out []kmsg.OffsetFetchResponseGroupTopic
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.topic
		for _, p := range t.parts {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.ErrorCode = p.partition, p.code
			rp.Offset, rp.LeaderEpoch = p.offset.Offset, p.offset.LeaderEpoch
			rp.Metadata = strp(p.offset.Metadata)
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
