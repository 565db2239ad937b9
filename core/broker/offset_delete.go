package broker

// OffsetDelete (API key 47), version 0.
//
// Behaviour: deletes a group's committed offsets for some partitions (tombstones,
// answered once durable). Allowed for every partition of an Empty group; for a consumer
// group with members only for topics none of them subscribes to (others get
// GROUP_SUBSCRIBED_TO_TOPIC); a non-empty group of another protocol type gets
// NON_EMPTY_GROUP. Unknown group → GROUP_ID_NOT_FOUND; unknown topic or partition →
// UNKNOWN_TOPIC_OR_PARTITION; a partition without an offset is answered without error.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
)

func (gc *groupCoordinator) handleOffsetDelete(r Request, m *kmsg.OffsetDeleteRequest) {
	resp := m.ResponseKind().(*kmsg.OffsetDeleteResponse)
	for _, t := range m.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	subscribed, code := gc.offsetDeleteScope(m.Group)
	if resp.ErrorCode = code; code != 0 {
		gc.reply(r, resp)
		return
	}
	var tps []core.TopicPartition
	var parts []*kmsg.OffsetDeleteResponseTopicPartition
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			tp := core.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			t := gc.image.Topic(tp.Topic)
			switch {
			case t == nil || tp.Partition < 0 || tp.Partition >= t.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case subscribed(tp.Topic):
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				if _, ok := gc.groups.coord.Offset(m.Group, tp); ok {
					tps, parts = append(tps, tp), append(parts, rp)
				}
			}
		}
	}
	var kvs []batch.KV
	for _, tp := range tps {
		kvs = append(kvs, batch.KV{Key: group.EncodeKey(m.Group, tp)})
	}
	gc.writeOffsets(gc.newOffsetWrite(m.Group, kvs, &offsetDeleteOwner{req: r, resp: resp,
		tps: tps, parts: parts}))
}

// offsetDeleteWritten applies an OffsetDelete's tombstones once durable and answers it.
func (gc *groupCoordinator) offsetDeleteWritten(groupID string, o *offsetDeleteOwner, code int16) {
	for i, tp := range o.tps {
		if o.parts[i].ErrorCode = code; code == 0 {
			gc.groups.coord.ApplyOffset(groupID, tp, nil)
		}
	}
	gc.groupChanged(groupID)
	gc.reply(o.req, o.resp)
}

// offsetDeleteScope returns which topics' offsets the group still uses, or a
// group-level error.
func (gc *groupCoordinator) offsetDeleteScope(id string) (func(topic string) bool, int16) {
	if code := gc.coordinatorCode(id); code != 0 {
		return nil, code
	}
	g := gc.groups.coord.Group(id)
	if g == nil {
		return nil, kerr.GroupIDNotFound.Code
	}
	if g.State() == group.Empty {
		return func(string) bool { return false }, 0
	}
	topics, known := g.SubscribedTopics()
	if !known {
		return nil, kerr.NonEmptyGroup.Code
	}
	set := map[string]bool{}
	for _, t := range topics {
		set[t] = true
	}
	return func(t string) bool { return set[t] }, 0
}
