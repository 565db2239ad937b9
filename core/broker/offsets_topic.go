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
func (ctl *adminController) queueOffsetsTopic() {
	if len(ctl.admin.queue) >= maxQueuedAdmin {
		ctl.post(msgOffsetsTopicEnded{})
		return
	}
	ctl.serialize(&opOffsetsTopic{})
}

// createOffsetsTopic proposes the offsets topic, unless it exists by now.
func (ctl *adminController) createOffsetsTopic(op *opOffsetsTopic) {
	if ctl.image.Topic(group.OffsetsTopic) != nil {
		// Created meanwhile: by a client, or our own proposal answered "outcome
		// unknown" that committed after all. Its logs may still be opening.
		op.existed = true
		ctl.afterOpens(op)
		return
	}
	// Then afterOpens: its partitions' logs (open_queue.go); then offsetsTopicOpened.
	ctl.proposeAll(op, []meta.Record{ctl.offsetsTopicRecord()})
}

// offsetsTopicOpened has the coordinator load the offsets topic once it exists and its
// logs are open, then run the writes that waited for it.
func (ctl *adminController) offsetsTopicOpened(op *opOffsetsTopic) {
	t := ctl.image.Topic(group.OffsetsTopic)
	switch {
	case op.existed:
		if t != nil {
			ctl.post(msgLoadOffsets{partitions: t.Partitions})
		}
	case op.errs[0] == nil && t != nil:
		ctl.hit(pOffsetsTopicCreate)
		ctl.post(msgLoadOffsets{partitions: t.Partitions})
	default:
		ctl.lg.Error("cannot create the offsets topic", zap.Error(op.errs[0]))
	}
	ctl.adminFinished(op)
	ctl.post(msgOffsetsTopicEnded{})
}

func (ctl *adminController) offsetsTopicRecord() meta.Record {
	return meta.Record{Kind: meta.KindTopicCreated, Topic: group.OffsetsTopic,
		TopicID: ctl.newTopicID(), Partitions: ctl.cfg.Groups.OffsetsPartitions,
		ReplicationFactor: 1,
		// Durable before answered, never removed by log retention (offsets expire
		// through the coordinator, groups_expire.go), segments of Kafka's
		// offsets.topic.segment.bytes.
		Configs: []meta.Config{{Name: "log.flush.policy", Value: "always"},
			{Name: "retention.bytes", Value: "-1"}, {Name: "retention.ms", Value: "-1"},
			{Name: "segment.bytes", Value: "104857600"}}}
}
