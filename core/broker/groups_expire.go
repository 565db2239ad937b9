package broker

// Expiry of committed offsets (offsets.retention.minutes, KIP-211): which offsets are
// due is decided by the coordinator (core/group/expiry.go); this file runs the check
// every offsets.retention.check.interval.ms and deletes them durably.
//
// Expired offsets get tombstones in the group's __consumer_offsets partition, through
// the same path commits take; the coordinator's table drops them once the tombstones
// are durable, so a restart never brings an expired offset back, nor loses one that
// was still live. A group left Empty with no offsets is deleted at the next pass, as
// Kafka deletes it at its next cleanup (until then it keeps its generation): its
// metadata record gets a tombstone, and the group is forgotten once that is durable.

import (
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
)

// armOffsetExpiry schedules the next expiry check.
func (gc *groupCoordinator) armOffsetExpiry() {
	gc.setTimer(gc.now.AddMillis(gc.cfg.Groups.RetentionCheckIntervalMs),
		brokerTimer{kind: timerOffsetExpiry})
}

// offsetExpiryPass deletes every offset due for expiry, group by group, then re-arms.
func (gc *groupCoordinator) offsetExpiryPass() {
	defer gc.armOffsetExpiry()
	// Groups left Empty since the last pass, as Kafka's cleanup.
	for _, id := range gc.groups.coord.Sweep() {
		gc.deleteGroupMetadata(id)
	}
	if gc.groups.parts == 0 {
		return // no offsets topic: no offsets
	}
	for _, e := range gc.groups.coord.ExpiredOffsets(gc.now) {
		if gc.groups.nWrite >= maxOffsetWrites/2 {
			// Leave room for commits; the rest goes at the next check.
			gc.lg.Info("offset expiry deferred: many offset writes in flight")
			return
		}
		if gc.coordinatorCode(e.Group) != 0 {
			continue // partition offline: try again at the next check
		}
		gc.expireOffsets(e.Group, e.TPs)
	}
}

// expireOffsets writes tombstones for tps of a group, in batches of bounded size, and
// drops the offsets once each batch is durable. A failed write leaves its offsets for
// the next check.
func (gc *groupCoordinator) expireOffsets(id string, tps []core.TopicPartition) {
	kvs := make([]batch.KV, len(tps))
	for i, tp := range tps {
		kvs[i] = batch.KV{Key: group.EncodeKey(id, tp)}
	}
	for _, chunk := range chunkRecords(kvs) {
		part := tps[:len(chunk)]
		tps = tps[len(chunk):]
		gc.groups.coord.WriteStarted(id, part)
		gc.writeOffsets(gc.newOffsetWrite(id, chunk, &expireOwner{part: part}))
	}
}

// expiryWritten applies expired offsets' tombstones once durable.
func (gc *groupCoordinator) expiryWritten(id string, part []core.TopicPartition, code int16) {
	gc.groups.coord.WriteEnded(id, part)
	if code != 0 {
		gc.logWriteFailure("expired offsets not deleted", id, code)
		return
	}
	for _, tp := range part {
		gc.groups.coord.ApplyOffset(id, tp, nil)
	}
	gc.hit(pOffsetsExpired)
	gc.lg.Info("committed offsets expired", zap.String("group", id),
		zap.Int("partitions", len(part)))
	gc.groupChanged(id)
}

// deleteGroupMetadata tombstones a swept group's metadata record and forgets the group
// once that is durable. A failed write leaves the group for the next pass.
func (gc *groupCoordinator) deleteGroupMetadata(id string) {
	if gc.coordinatorCode(id) != 0 {
		return
	}
	gc.writeOffsets(gc.newOffsetWrite(id, []batch.KV{{Key: group.EncodeGroupKey(id)}},
		&sweepOwner{}))
}

// sweepWritten forgets a swept group once its metadata tombstone is durable.
func (gc *groupCoordinator) sweepWritten(id string, code int16) {
	if code != 0 {
		gc.logWriteFailure("empty group not deleted", id, code)
		return
	}
	gc.hit(pGroupSwept)
	gc.groups.coord.Forget(id)
	gc.groupChanged(id)
}
