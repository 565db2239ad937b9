package broker

// The controller side of the offsets topic: the group coordinator asks for
// __consumer_offsets (msgEnsureOffsetsTopic) when a write needs it, and the admin queue
// creates it as one operation (opOffsetsTopic), so that no client CreateTopics races
// it. Once its logs are open the coordinator loads it (msgLoadOffsets) and runs the
// writes that waited (msgOffsetsTopicEnded).

import (
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
)

// queueOffsetsTopic queues the creation of the offsets topic (msgEnsureOffsetsTopic),
// unless the admin queue is full: then the writes waiting for it fail, and a retry
// tries again.
func (b *Broker) queueOffsetsTopic() {
	if len(b.admin.queue) >= maxQueuedAdmin {
		b.post(msgOffsetsTopicEnded{})
		return
	}
	b.serialize(&opOffsetsTopic{})
}

// createOffsetsTopic proposes the offsets topic, unless it exists by now.
func (b *Broker) createOffsetsTopic(op *opOffsetsTopic) {
	if b.image.Topic(group.OffsetsTopic) != nil {
		// Created meanwhile: by a client, or our own proposal answered "outcome
		// unknown" that committed after all. Its logs may still be opening.
		op.existed = true
		b.afterOpens(op)
		return
	}
	// Then afterOpens: its partitions' logs (open_queue.go); then offsetsTopicOpened.
	b.proposeAll(op, []meta.Record{b.offsetsTopicRecord()})
}

// offsetsTopicOpened has the coordinator load the offsets topic once it exists and its
// logs are open, then run the writes that waited for it.
func (b *Broker) offsetsTopicOpened(op *opOffsetsTopic) {
	t := b.image.Topic(group.OffsetsTopic)
	switch {
	case op.existed:
		if t != nil {
			b.post(msgLoadOffsets{partitions: t.Partitions})
		}
	case op.errs[0] == nil && t != nil:
		b.hit(pOffsetsTopicCreate)
		b.post(msgLoadOffsets{partitions: t.Partitions})
	default:
		b.lg.Error("cannot create the offsets topic", zap.Error(op.errs[0]))
	}
	b.adminFinished(op)
	b.post(msgOffsetsTopicEnded{})
}

func (b *Broker) offsetsTopicRecord() meta.Record {
	return meta.Record{Kind: meta.KindTopicCreated, Topic: group.OffsetsTopic,
		TopicID: b.newTopicID(), Partitions: b.cfg.Groups.OffsetsPartitions,
		ReplicationFactor: 1,
		// Durable before answered, never removed by log retention (offsets expire
		// through the coordinator, groups_expire.go), segments of Kafka's
		// offsets.topic.segment.bytes.
		Configs: []meta.Config{{Name: "log.flush.policy", Value: "always"},
			{Name: "retention.bytes", Value: "-1"}, {Name: "retention.ms", Value: "-1"},
			{Name: "segment.bytes", Value: "104857600"}}}
}
