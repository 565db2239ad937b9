package broker

import (
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
)

// apply folds a committed metadata record into the image and brings the hosted
// replicas in line with it. Every node applies every committed record in commit order.
// A record that does not apply to the image (it was checked against an image that a
// record committed before it has since changed) changes nothing; the error says why.
func (b *Broker) apply(rec meta.Record) error {
	var before int32
	if t := b.image.Topic(rec.Topic); t != nil {
		before = t.Partitions
	}
	prev, _, hadPrev := b.image.Partition(rec.Topic, rec.Partition)
	if err := b.image.Apply(rec); err != nil {
		b.lg.Warn("metadata record did not apply", zap.Stringer("kind", rec.Kind),
			zap.String("topic", rec.Topic), zap.Error(err))
		return err
	}
	after := int32(0)
	if t := b.image.Topic(rec.Topic); t != nil {
		after = t.Partitions
	}
	b.countPartitions(before, after)
	switch rec.Kind {
	case meta.KindTopicCreated, meta.KindPartitionsAdded:
		t := b.image.Topic(rec.Topic)
		for p := before; p < t.Partitions; p++ {
			if tp := (core.TopicPartition{Topic: rec.Topic, Partition: p}); b.hostedHere(tp) {
				b.queueOpen(tp)
			}
		}
		if b.opens.live {
			b.openSome() // the first chunk now, the rest in later steps (open_queue.go)
		}
		if rec.Topic == group.OffsetsTopic && b.offsetsAssigned() {
			// Its leaders coordinate its groups from now on (groups_load.go).
			b.takeOffsetsRoles(t.Partitions)
		}
	case meta.KindTopicDeleted:
		for p := int32(0); p < before; p++ {
			b.removeReplica(core.TopicPartition{Topic: rec.Topic, Partition: p})
		}
		if b.groups.coord != nil && b.offsetsAssigned() {
			// Every coordinator removes the deleted topic's offsets from the groups it
			// coordinates, not only the node that took the DeleteTopics (groups_topics.go).
			b.purgeOrphanOffsets()
		}
	case meta.KindConfigsAltered:
		b.hit(pConfigsApplied)
		t := b.image.Topic(rec.Topic)
		cfg := b.replicaConfig(t)
		for p := int32(0); p < t.Partitions; p++ {
			tp := core.TopicPartition{Topic: rec.Topic, Partition: p}
			if r := b.replicas[tp]; r != nil {
				hwm := r.HighWatermark()
				r.Configure(cfg)
				if r.HighWatermark() != hwm {
					// log.flush.policy=never made unsynced data visible: answer the
					// writes and fetches that were waiting for it.
					b.hit(pConfigsHWMMoved)
					b.hwmAdvanced(tp)
				}
			}
		}
	case meta.KindPartitionChange:
		// Host, lead or follow by the new state (placement.go). At the Start replay a
		// node that leaves the replicas and joins them again later keeps its log.
		tp := core.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}
		b.partitionChanged(tp, b.opens.live || b.replay.lastHere[tp] <= b.replay.at)
		if hadPrev && b.opens.live {
			b.countPartitionChange(prev, rec.State)
		}
	case meta.KindProducerIDBlock:
	case meta.KindScramCredentialSet, meta.KindScramCredentialDeleted:
		// Image only: the wire layer authenticates against it (runtime keeps a copy).
	case meta.KindClientQuotaAltered:
		// Image only: produce and fetch read the quotas from it (quotas.go).
	case meta.KindACLsCreated, meta.KindACLsDeleted:
		// Image only: every request is authorized against it (authorize.go).
	case meta.KindClusterCreated, meta.KindBrokerRegistered, meta.KindBrokerChange,
		meta.KindBrokerUnregistered:
		// The controller (core/controller) and the lifecycle act on these; this node
		// starts leading once its own incarnation is unfenced (membership.go).
		if b.opens.live {
			b.checkUnfenced()
		}
	default:
		core.Invariant(false, "B4", "apply: unhandled record kind %v", rec.Kind)
	}
	return nil
}
