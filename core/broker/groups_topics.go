package broker

// Committed offsets of deleted topics. Kafka removes a topic's offsets from every group
// when the topic is deleted, so a topic created again under the same name starts with
// no committed offsets; kept, they would point past the new log's end (issue 6 item 7).
//
// DeleteTopics writes, once its TopicDeleted records committed, a tombstone for every
// group's offset (and offset write in flight) of the deleted partitions, through the
// path commits take, and answers once they are durable. It is an admin operation, so
// no CreateTopics or auto-creation of the same name runs before the tombstones are
// durable. At start, after the offsets topic was replayed, offsets of partitions the
// metadata no longer has (a crash between the deletion's commit and its tombstones)
// are tombstoned the same way, also as an admin operation ahead of any creation.

import (
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
)

// deleteTopicOffsets tombstones the offsets of every partition of topics and continues
// op once every tombstone is durable or failed.
func (b *Broker) deleteTopicOffsets(topics map[string]bool, op *opDeleteTopics) {
	b.deleteOffsetsWhere("topic deleted", func(tp core.TopicPartition) bool {
		return topics[tp.Topic]
	}, op)
}

// purgeOrphanOffsets tombstones, as an admin operation, offsets whose partition the
// metadata does not have: left by a crash before a deleted topic's tombstones were
// durable. Called at start once the offsets are loaded.
func (b *Broker) purgeOrphanOffsets() {
	if len(b.groups.coord.OffsetsWhere(orphanOffset(b))) == 0 {
		return
	}
	b.hit(pOffsetsOrphansPurged)
	b.serialize(&opPurgeOrphans{})
}

// purgeOrphans tombstones the offsets of topics that are gone, as the admin
// operation queued at start.
func (b *Broker) purgeOrphans(op *opPurgeOrphans) {
	b.deleteOffsetsWhere("topic no longer exists", orphanOffset(b), op)
}

// orphanOffset says whether tp's committed offsets belong to no partition of b's image.
func orphanOffset(b *Broker) func(core.TopicPartition) bool {
	return func(tp core.TopicPartition) bool {
		t := b.image.Topic(tp.Topic)
		return t == nil || tp.Partition < 0 || tp.Partition >= t.Partitions
	}
}

// deleteOffsetsWhere writes tombstones for the offsets drop selects, group by group in
// bounded batches, applies each batch once durable, and calls done when all ended. A
// failed batch is logged and its offsets stay (the next start retries them if the
// topic is still gone). op counts the writes in flight (adminOffsetWriteEnded) and
// continues in adminOffsetsWritten when all ended.
func (b *Broker) deleteOffsetsWhere(why string, drop func(core.TopicPartition) bool,
	op adminOp) {
	a := op.base()
	a.phase = adminOffsets
	a.left = 1 // released after the loop, so that synchronous answers cannot finish early
	if b.groups.parts > 0 {
		for _, e := range b.groups.coord.OffsetsWhere(drop) {
			for _, part := range chunkTPs(e.Group, e.TPs) {
				a.left++
				b.tombstoneOffsets(why, e.Group, part, op)
			}
		}
	}
	b.adminOffsetWriteEnded(op)
}

func (b *Broker) tombstoneOffsets(why, id string, tps []core.TopicPartition, op adminOp) {
	kvs := make([]batch.KV, len(tps))
	for i, tp := range tps {
		kvs[i] = batch.KV{Key: group.EncodeKey(id, tp)}
	}
	b.groups.coord.WriteStarted(id, tps)
	b.writeOffsets(b.newOffsetWrite(id, kvs, &tombstoneOwner{why: why, tps: tps, op: op}))
}

// tombstonesWritten applies a deleted topic's offsets' tombstones once durable.
func (b *Broker) tombstonesWritten(id string, o *tombstoneOwner, code int16) {
	why, tps := o.why, o.tps
	b.groups.coord.WriteEnded(id, tps)
	if code != 0 {
		b.lg.Error("offsets of a deleted topic not removed", zap.String("group", id),
			zap.String("why", why), zap.Int("partitions", len(tps)),
			zap.Int16("code", code))
	} else {
		for _, tp := range tps {
			b.groups.coord.ApplyOffset(id, tp, nil)
		}
		b.hit(pOffsetsTopicDeleted)
		b.lg.Info("committed offsets removed", zap.String("group", id),
			zap.String("why", why), zap.Int("partitions", len(tps)))
		b.groupChanged(id)
	}
	b.adminOffsetWriteEnded(o.op)
}

// chunkTPs splits a group's partitions into batches of bounded size, as chunkRecords
// splits records.
func chunkTPs(id string, tps []core.TopicPartition) [][]core.TopicPartition {
	kvs := make([]batch.KV, len(tps))
	for i, tp := range tps {
		kvs[i] = batch.KV{Key: group.EncodeKey(id, tp)}
	}
	var out [][]core.TopicPartition
	for _, chunk := range chunkRecords(kvs) {
		out = append(out, tps[:len(chunk)])
		tps = tps[len(chunk):]
	}
	return out
}
