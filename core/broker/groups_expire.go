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
func (b *Broker) armOffsetExpiry() {
	b.setTimer(b.now.AddMillis(b.cfg.Groups.RetentionCheckIntervalMs),
		brokerTimer{kind: timerOffsetExpiry})
}

// offsetExpiryPass deletes every offset due for expiry, group by group, then re-arms.
func (b *Broker) offsetExpiryPass() {
	defer b.armOffsetExpiry()
	// Groups left Empty since the last pass, as Kafka's cleanup.
	for _, id := range b.groups.coord.Sweep() {
		b.deleteGroupMetadata(id)
	}
	if b.groups.parts == 0 {
		return // no offsets topic: no offsets
	}
	for _, e := range b.groups.coord.ExpiredOffsets(b.now) {
		if b.groups.nWrite >= maxOffsetWrites/2 {
			// Leave room for commits; the rest goes at the next check.
			b.lg.Info("offset expiry deferred: many offset writes in flight")
			return
		}
		if b.coordinatorCode(e.Group) != 0 {
			continue // partition offline: try again at the next check
		}
		b.expireOffsets(e.Group, e.TPs)
	}
}

// expireOffsets writes tombstones for tps of a group, in batches of bounded size, and
// drops the offsets once each batch is durable. A failed write leaves its offsets for
// the next check.
func (b *Broker) expireOffsets(id string, tps []core.TopicPartition) {
	kvs := make([]batch.KV, len(tps))
	for i, tp := range tps {
		kvs[i] = batch.KV{Key: group.EncodeKey(id, tp)}
	}
	for _, chunk := range chunkRecords(kvs) {
		part := tps[:len(chunk)]
		tps = tps[len(chunk):]
		b.groups.coord.WriteStarted(id, part)
		b.writeOffsets(b.newOffsetWrite(id, chunk, &expireOwner{part: part}))
	}
}

// expiryWritten applies expired offsets' tombstones once durable.
func (b *Broker) expiryWritten(id string, part []core.TopicPartition, code int16) {
	b.groups.coord.WriteEnded(id, part)
	if code != 0 {
		b.logWriteFailure("expired offsets not deleted", id, code)
		return
	}
	for _, tp := range part {
		b.groups.coord.ApplyOffset(id, tp, nil)
	}
	b.hit(pOffsetsExpired)
	b.lg.Info("committed offsets expired", zap.String("group", id),
		zap.Int("partitions", len(part)))
	b.groupChanged(id)
}

// deleteGroupMetadata tombstones a swept group's metadata record and forgets the group
// once that is durable. A failed write leaves the group for the next pass.
func (b *Broker) deleteGroupMetadata(id string) {
	if b.coordinatorCode(id) != 0 {
		return
	}
	b.writeOffsets(b.newOffsetWrite(id, []batch.KV{{Key: group.EncodeGroupKey(id)}},
		&sweepOwner{}))
}

// sweepWritten forgets a swept group once its metadata tombstone is durable.
func (b *Broker) sweepWritten(id string, code int16) {
	if code != 0 {
		b.logWriteFailure("empty group not deleted", id, code)
		return
	}
	b.hit(pGroupSwept)
	b.groups.coord.Forget(id)
	b.groupChanged(id)
}
