package broker

// Compaction of __consumer_offsets without log compaction.
//
// Kafka compacts the offsets topic (cleanup.policy=compact). Sluice's logs only delete
// whole segments, so the coordinator compacts by rewriting: once a partition took
// CompactAfterRecords records since its last rewrite, and at least twice as many as it
// has live records, the live records of its groups are appended again as a snapshot:
// each group's last durable metadata record and its committed offsets, that is the
// latest value of every key (a key whose latest value is a tombstone has none). Once
// that is durable, the log start moves to the snapshot's first offset (DeleteRecords)
// and whole segments below it go. Replay at start then reads the snapshot and what
// followed. This keeps the disk and the restart time bounded by the live records
// rather than by every commit ever made.
//
// Safety: the snapshot is taken only while no write waits on the partition (metadata
// records take the same path as commits), so the table (durable commits and metadata
// only) equals the log up to the snapshot's start; everything below that start is
// superseded by the snapshot. A crash before the snapshot is durable leaves the old
// records and part of a snapshot holding the same values: replay gives the same table
// either way.

import (
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
)

// compactBatchBytes bounds one snapshot batch, well under max.message.bytes.
const compactBatchBytes = 256 << 10

type compactState struct {
	since   map[core.TopicPartition]int  // records appended since the last snapshot
	running map[core.TopicPartition]bool // a snapshot waits for durability
}

// maybeCompactOffsets rewrites tp to its live offsets when that is due and safe.
func (b *Broker) maybeCompactOffsets(tp core.TopicPartition) {
	c := &b.groups.compact
	rep := b.replicas[tp]
	if c.running[tp] || c.since[tp] < b.cfg.Groups.CompactAfterRecords ||
		len(b.groups.writes[tp]) > 0 || rep == nil || rep.Offline() ||
		rep.HighWatermark() != rep.EndOffset() {
		return
	}
	live := b.liveOffsets(tp.Partition)
	if c.since[tp] < 2*len(live) {
		return // mostly live already: a rewrite would not shrink it
	}
	start := rep.EndOffset()
	incarnation := rep.Incarnation()
	if len(live) == 0 {
		c.since[tp] = 0
		b.offsetsSnapshotDone(tp, incarnation, start, 0, 0) // nothing to keep
		return
	}
	last := start
	for _, chunk := range chunkRecords(live) {
		res := rep.Append(b.now.Millis(), batch.Build(chunk, batch.NoProducer, b.now.Millis()))
		if res.Err != 0 {
			// What was appended repeats live values: harmless. Try again later.
			b.lg.Warn("offsets snapshot not written", zap.Stringer("tp", tp),
				zap.Int16("code", res.Err))
			return
		}
		last = res.WaitOffset
	}
	c.since[tp] = len(live)
	c.running[tp] = true
	w := b.newOffsetWrite("", nil, &snapshotOwner{incarnation: incarnation, start: start,
		live: len(live)})
	w.n, w.tp, w.offset, w.appended = len(live), tp, last, true
	b.groups.writes[tp] = append(b.groups.writes[tp], w)
	b.groups.nWrite++
	b.produces.dirty = append(b.produces.dirty, tp)
	b.requestSyncs()
}

// offsetsSnapshotDone moves the log start to the snapshot once it is durable.
func (b *Broker) offsetsSnapshotDone(tp core.TopicPartition, incarnation uint64, start int64,
	live int, code int16) {
	b.groups.compact.running[tp] = false
	rep := b.replicas[tp]
	if code != 0 || rep == nil || rep.Incarnation() != incarnation {
		return
	}
	newStart, code := rep.DeleteRecordsBefore(start)
	if code != 0 {
		b.lg.Warn("offsets partition not trimmed", zap.Stringer("tp", tp),
			zap.Int16("code", code))
		return
	}
	b.hit(pOffsetsCompacted)
	b.lg.Info("offsets partition compacted", zap.Stringer("tp", tp),
		zap.Int64("log_start_offset", newStart), zap.Int("live_offsets", live))
}

// liveOffsets returns the live records of every group stored in partition p — its
// durable metadata record, if any, and its committed offsets — in a fixed order.
func (b *Broker) liveOffsets(p int32) []batch.KV {
	var kvs []batch.KV
	for _, id := range b.groups.coord.GroupIDs() {
		if group.Partition(id, b.groups.parts) != p {
			continue
		}
		if v := b.groups.coord.Group(id).Durable(); v != nil {
			kvs = append(kvs, batch.KV{Key: group.EncodeGroupKey(id), Value: v})
		}
		for _, po := range b.groups.coord.Offsets(id) {
			kvs = append(kvs, batch.KV{Key: group.EncodeKey(id, po.TP),
				Value: group.EncodeValue(po.Offset)})
		}
	}
	return kvs
}

// chunkRecords splits records into batches of at most compactBatchBytes (roughly).
func chunkRecords(kvs []batch.KV) [][]batch.KV {
	var out [][]batch.KV
	start, size := 0, 0
	for i, kv := range kvs {
		n := len(kv.Key) + len(kv.Value) + 16 // plus record framing, roughly
		if i > start && size+n > compactBatchBytes {
			out = append(out, kvs[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(kvs) {
		out = append(out, kvs[start:])
	}
	return out
}
