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

// maybeCompactOffsets rewrites tp to its live offsets when that is due and safe. The
// replica manager appends the snapshot (msgAppendSnapshot) and answers
// msgSnapshotAppended.
func (gc *groupCoordinator) maybeCompactOffsets(tp core.TopicPartition) {
	c := &gc.groups.compact
	if c.running[tp] || c.since[tp] < gc.cfg.Groups.CompactAfterRecords ||
		len(gc.groups.writes[tp]) > 0 {
		return
	}
	pos, ok := gc.logs.position(tp)
	if !ok || pos.offline || pos.hwm != pos.end {
		return
	}
	if s, assigned := gc.assignedState(tp); assigned && gc.ownerCode(tp, s) != 0 {
		return // only the loaded leader rewrites its partition
	}
	live := gc.liveOffsets(tp.Partition)
	if c.since[tp] < 2*len(live) {
		return // mostly live already: a rewrite would not shrink it
	}
	if len(live) == 0 {
		c.since[tp] = 0
		gc.offsetsSnapshotDone(tp, pos.incarnation, pos.end, 0, 0) // nothing to keep
		return
	}
	var batches [][]byte
	for _, chunk := range chunkRecords(live) {
		batches = append(batches, batch.Build(chunk, batch.NoProducer, gc.now.Millis()))
	}
	w := gc.newOffsetWrite("", nil, &snapshotOwner{incarnation: pos.incarnation,
		start: pos.end, live: len(live)})
	w.n, w.tp = len(live), tp
	gc.post(msgAppendSnapshot{write: w, tp: tp, batches: batches})
}

// snapshotAppended records an appended snapshot; it ends (offsetsSnapshotDone) once
// durable.
func (gc *groupCoordinator) snapshotAppended(m msgSnapshotAppended) {
	w, c := m.write, &gc.groups.compact
	c.since[w.tp] = w.n
	c.running[w.tp] = true
	w.offset, w.appended = m.offset, true
	gc.groups.writes[w.tp] = append(gc.groups.writes[w.tp], w)
	gc.groups.nWrite++
}

// offsetsSnapshotDone has the replica manager move the log start to the snapshot once
// it is durable (msgTrimOffsets).
func (gc *groupCoordinator) offsetsSnapshotDone(tp core.TopicPartition, incarnation uint64,
	start int64, live int, code int16) {
	gc.groups.compact.running[tp] = false
	if code != 0 {
		return
	}
	gc.post(msgTrimOffsets{tp: tp, incarnation: incarnation, start: start, live: live})
}

// liveOffsets returns the live records of every group stored in partition p — its
// durable metadata record, if any, and its committed offsets — in a fixed order.
func (gc *groupCoordinator) liveOffsets(p int32) []batch.KV {
	var kvs []batch.KV
	for _, id := range gc.groups.coord.GroupIDs() {
		if group.Partition(id, gc.groups.parts) != p {
			continue
		}
		if v := gc.groups.coord.Group(id).Durable(); v != nil {
			kvs = append(kvs, batch.KV{Key: group.EncodeGroupKey(id), Value: v})
		}
		for _, po := range gc.groups.coord.Offsets(id) {
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
