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
	"github.com/sluicemq/sluice/core/meta"
)

// tombstoneTopics tombstones, for the admin operation m.op, the committed offsets of
// the topics m names, or with none named those of topics the image no longer has.
func (gc *groupCoordinator) tombstoneTopics(m msgTombstoneOffsets) {
	drop := orphanOffset(gc.image)
	if m.topics != nil {
		drop = func(tp core.TopicPartition) bool { return m.topics[tp.Topic] }
	}
	gc.deleteOffsetsWhere(m.why, drop, m.op)
}

// purgeOrphanOffsets asks for an admin operation (msgPurgeOrphans) tombstoning offsets
// whose partition the metadata does not have: left by a crash before a deleted topic's
// tombstones were durable. Called at start once the offsets are loaded.
func (gc *groupCoordinator) purgeOrphanOffsets() {
	if len(gc.groups.coord.OffsetsWhere(orphanOffset(gc.image))) == 0 {
		return
	}
	gc.hit(pOffsetsOrphansPurged)
	gc.post(msgPurgeOrphans{})
}

// orphanOffset says whether tp's committed offsets belong to no partition of img.
func orphanOffset(img *meta.Image) func(core.TopicPartition) bool {
	return func(tp core.TopicPartition) bool {
		t := img.Topic(tp.Topic)
		return t == nil || tp.Partition < 0 || tp.Partition >= t.Partitions
	}
}

// deleteOffsetsWhere writes tombstones for the offsets drop selects, group by group in
// bounded batches, and applies each batch once durable. A failed batch is logged and
// its offsets stay (the next start retries them if the topic is still gone). op counts
// the writes in flight (msgTombstoneCount: +1 as each starts, -1 as each ends, and a
// last -1 once all were started, so that synchronous answers cannot finish it early)
// and continues in adminOffsetsWritten when all ended.
func (gc *groupCoordinator) deleteOffsetsWhere(why string, drop func(core.TopicPartition) bool,
	op adminOp) {
	if gc.groups.parts > 0 {
		for _, e := range gc.groups.coord.OffsetsWhere(drop) {
			for _, part := range chunkTPs(e.Group, e.TPs) {
				gc.post(msgTombstoneCount{op: op, delta: 1})
				gc.tombstoneOffsets(why, e.Group, part, op)
			}
		}
	}
	gc.post(msgTombstoneCount{op: op, delta: -1})
}

func (gc *groupCoordinator) tombstoneOffsets(why, id string, tps []core.TopicPartition,
	op adminOp) {
	kvs := make([]batch.KV, len(tps))
	for i, tp := range tps {
		kvs[i] = batch.KV{Key: group.EncodeKey(id, tp)}
	}
	gc.groups.coord.WriteStarted(id, tps)
	gc.writeOffsets(gc.newOffsetWrite(id, kvs, &tombstoneOwner{why: why, tps: tps, op: op}))
}

// tombstonesWritten applies a deleted topic's offsets' tombstones once durable.
func (gc *groupCoordinator) tombstonesWritten(id string, o *tombstoneOwner, code int16) {
	why, tps := o.why, o.tps
	gc.groups.coord.WriteEnded(id, tps)
	if code != 0 {
		gc.lg.Error("offsets of a deleted topic not removed", zap.String("group", id),
			zap.String("why", why), zap.Int("partitions", len(tps)),
			zap.Int16("code", code))
	} else {
		for _, tp := range tps {
			gc.groups.coord.ApplyOffset(id, tp, nil)
		}
		gc.hit(pOffsetsTopicDeleted)
		gc.lg.Info("committed offsets removed", zap.String("group", id),
			zap.String("why", why), zap.Int("partitions", len(tps)))
		gc.groupChanged(id)
	}
	gc.post(msgTombstoneCount{op: o.op, delta: -1})
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
