package broker

// The controller side of the offsets topic: the group coordinator asks for
// __consumer_offsets (msgEnsureOffsetsTopic) when a write needs it, and the admin queue
// creates it as one operation (opOffsetsTopic), so that no client CreateTopics races
// it. Once its logs are open the coordinator loads it (msgLoadOffsets) and runs the
// writes that waited (msgOffsetsTopicEnded).

import (
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/controller"
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
	if ctl.notController() {
		ctl.forwardOffsetsTopic(op)
		return
	}
	// Then afterOpens: its partitions' logs (open_queue.go); then offsetsTopicOpened.
	ctl.proposeAll(op, []meta.Record{ctl.offsetsTopicRecord()})
}

// forwardOffsetsTopic has the controller's node create the offsets topic, on a quorum
// node that is not the controller (controller_port.go); offsetsForwarded continues.
func (ctl *adminController) forwardOffsetsTopic(op *opOffsetsTopic) {
	rec := ctl.offsetsTopicSpec()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = rec.Topic, rec.Partitions,
		rec.ReplicationFactor
	for _, c := range rec.Configs {
		tc := kmsg.NewCreateTopicsRequestTopicConfig()
		tc.Name, tc.Value = c.Name, strp(c.Value)
		t.Configs = append(t.Configs, tc)
	}
	op.phase = adminForwarding
	if !ctl.forwardCreateTopics([]kmsg.CreateTopicsRequestTopic{t}, op) {
		ctl.offsetsForwarded(op)
	}
}

// offsetsForwarded continues the creation of the offsets topic once the controller's
// node answered (or none was known): if this node has applied the topic's record, its
// logs are awaited and the coordinator loads it; otherwise the writes that waited fail
// retriably (COORDINATOR_NOT_AVAILABLE, as Kafka answers while it creates the topic)
// and the next one finds the topic.
func (ctl *adminController) offsetsForwarded(op *opOffsetsTopic) {
	if ctl.image.Topic(group.OffsetsTopic) != nil {
		op.existed = true
		ctl.afterOpens(op)
		return
	}
	ctl.lg.Info("the offsets topic is not created yet; group requests are answered " +
		"COORDINATOR_NOT_AVAILABLE until it is")
	ctl.adminFinished(op)
	ctl.post(msgOffsetsTopicEnded{})
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
	rec := ctl.offsetsTopicSpec()
	rec.TopicID = ctl.newTopicID()
	return rec
}

// offsetsTopicReplicationFactor is 1 on a node without a quorum, and with one
// offsets.topic.replication.factor capped to the brokers the cluster has registered,
// fenced or not, or to the quorum's nodes when more (the min(3, brokers): a one-
// or two-broker cluster still gets group offsets). The quorum's size matters at a
// cluster's first start: the brokers register one by one, and a group request that came
// while one had registered created the topic with one replica, so no group of a
// min.insync.replicas=2 cluster could ever sync or commit (the simulator's --set nodes=5
// seed 65 and nodes=3 seed 65, docs/simulation.md). While fewer of them are live (registered and unfenced) it is that
// cap all the same: the controller refuses the topic and the writes waiting for it get
// COORDINATOR_NOT_AVAILABLE until enough brokers are up, as Kafka refuses. Capping to
// the live brokers instead created the topic with one replica when the first group
// request came before the other brokers were unfenced, and with
// min.insync.replicas=2 no group could ever commit (found by the simulator with
// --set nodes=3, docs/simulation.md "Clusters").
func (ctl *adminController) offsetsTopicReplicationFactor() int16 {
	if ctl.ctlPort == nil {
		return 1
	}
	want := ctl.cfg.Groups.OffsetsReplicationFactor
	brokers := max(len(ctl.image.Brokers()), ctl.quorumSize)
	if mutantOn("offsets-rf-live-brokers") {
		brokers = len(controller.EligibleBrokers(ctl.image))
	}
	if n := int16(min(brokers, math.MaxInt16)); n > 0 && n < want {
		ctl.lg.Warn("offsets topic gets fewer replicas than "+
			"offsets.topic.replication.factor: the cluster has fewer brokers",
			zap.Int16("offsets.topic.replication.factor", want), zap.Int("brokers", brokers))
		want = n
	}
	if live := len(controller.EligibleBrokers(ctl.image)); live < int(want) {
		ctl.lg.Info("offsets topic not created yet: fewer live brokers than its replicas; "+
			"group requests are answered COORDINATOR_NOT_AVAILABLE meanwhile",
			zap.Int16("replicas", want), zap.Int("live_brokers", live))
	}
	return want
}

// offsetsTopicSpec is the offsets topic's TopicCreated record without its topic id.
func (ctl *adminController) offsetsTopicSpec() meta.Record {
	return meta.Record{Kind: meta.KindTopicCreated, Topic: group.OffsetsTopic,
		Partitions:        ctl.cfg.Groups.OffsetsPartitions,
		ReplicationFactor: ctl.offsetsTopicReplicationFactor(),
		// Durable before answered, compacted as in Kafka and never removed by log
		// retention (offsets expire through the coordinator's tombstones,
		// groups_expire.go; compactConfig compacts the topic whatever these say),
		// segments of offsets.topic.segment.bytes so the cleaner has closed ones.
		Configs: []meta.Config{{Name: "cleanup.policy", Value: "compact"},
			{Name: "log.flush.policy", Value: "always"},
			{Name: "retention.bytes", Value: "-1"}, {Name: "retention.ms", Value: "-1"},
			{Name: "segment.bytes",
				Value: strconv.FormatInt(ctl.cfg.Groups.OffsetsSegmentBytes, 10)}}}
}
