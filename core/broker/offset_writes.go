package broker

// Offset writes as typed records.
//
// Every append to __consumer_offsets is one offsetWrite: the group it belongs to, its
// records (until appended), the offset that makes it durable, and its owner, which
// says what the outcome is for: a client's OffsetCommit, OffsetDelete or DeleteGroups,
// a group's metadata record, an expiry or sweep (groups_expire.go), or a topic deletion's tombstones (groups_topics.go). A
// write waits in groups.created while the offsets topic is being created, then in
// groups.writes[tp] until the high-water mark covers it; offsetWriteEnded dispatches
// its outcome with one switch over the owner's type (B11 for an unknown one).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
)

// offsetWrite is a batch of offset records waiting for the offsets topic or for
// durability.
type offsetWrite struct {
	group    string
	kvs      []batch.KV // the records, until appended
	n        int        // how many records
	since    core.Time  // when it was asked for
	tp       core.TopicPartition
	offset   int64 // durable once tp's high-water mark reaches it
	appended bool  // in groups.writes[tp]; before, in groups.created or not queued
	owner    writeOwner
}

// writeOwner is what an offset write's outcome goes to. The set is closed: the *Owner
// types below.
type writeOwner interface{ ownerName() string }

// commitOwner is an OffsetCommit request; pending are its partitions being written.
type commitOwner struct {
	req     Request
	resp    *kmsg.OffsetCommitResponse
	tps     []core.TopicPartition
	pending []pendingCommit
}

// offsetDeleteOwner is an OffsetDelete request; parts[i] answers tps[i].
type offsetDeleteOwner struct {
	req   Request
	resp  *kmsg.OffsetDeleteResponse
	tps   []core.TopicPartition
	parts []*kmsg.OffsetDeleteResponseTopicPartition
}

// deleteGroupsReq is a DeleteGroups request; left counts its writes in flight plus one
// held until every write was started.
type deleteGroupsReq struct {
	req  Request
	resp *kmsg.DeleteGroupsResponse
	left int
}

// deleteGroupOwner is one group of a DeleteGroups request.
type deleteGroupOwner struct {
	parent *deleteGroupsReq
	rg     *kmsg.DeleteGroupsResponseGroup
	offs   []group.PartitionOffset
}

// groupMetadataOwner is a group's metadata record (persistGroup).
type groupMetadataOwner struct {
	g *group.Group
	w group.MetadataWrite
}

// expireOwner is a batch of expired offsets' tombstones (groups_expire.go).
type expireOwner struct{ part []core.TopicPartition }

// sweepOwner is the tombstone of an empty group's metadata (groups_expire.go).
type sweepOwner struct{}

// tombstoneOwner is a batch of a deleted topic's offsets' tombstones, for op
// (groups_topics.go).
type tombstoneOwner struct {
	why string
	tps []core.TopicPartition
	op  adminOp
}

func (*commitOwner) ownerName() string        { return "OffsetCommit" }
func (*offsetDeleteOwner) ownerName() string  { return "OffsetDelete" }
func (*deleteGroupOwner) ownerName() string   { return "DeleteGroups" }
func (*groupMetadataOwner) ownerName() string { return "group-metadata" }
func (*expireOwner) ownerName() string        { return "offsets-expiry" }
func (*sweepOwner) ownerName() string         { return "group-sweep" }
func (o *tombstoneOwner) ownerName() string   { return "tombstones(" + adminName(o.op) + ")" }

// ownerRequest is the client request an owner answers, if any.
func ownerRequest(o writeOwner) (Request, bool) {
	switch o := o.(type) {
	case *commitOwner:
		return o.req, true
	case *offsetDeleteOwner:
		return o.req, true
	case *deleteGroupOwner:
		return o.parent.req, true
	case *tombstoneOwner:
		a := o.op.base()
		return a.req, a.req != (Request{})
	default:
		return Request{}, false
	}
}

// newOffsetWrite makes the write of kvs for groupID on behalf of owner.
func (gc *groupCoordinator) newOffsetWrite(groupID string, kvs []batch.KV,
	owner writeOwner) *offsetWrite {
	return &offsetWrite{group: groupID, kvs: kvs, n: len(kvs), since: gc.now, owner: owner}
}

// offsetWriteEnded hands a write's outcome to its owner: 0 when durable, otherwise
// the error for the client.
func (gc *groupCoordinator) offsetWriteEnded(w *offsetWrite, code int16) {
	switch o := w.owner.(type) {
	case *commitOwner:
		gc.commitWritten(w.group, o, code)
	case *offsetDeleteOwner:
		gc.offsetDeleteWritten(w.group, o, code)
	case *deleteGroupOwner:
		gc.groupDeleteWritten(w.group, o, code)
	case *groupMetadataOwner:
		o.g.MetadataWritten(gc.now, o.w, code)
		gc.groupChanged(w.group)
	case *expireOwner:
		gc.expiryWritten(w.group, o.part, code)
	case *sweepOwner:
		gc.sweepWritten(w.group, code)
	case *tombstoneOwner:
		gc.tombstonesWritten(w.group, o, code)
	default:
		core.Invariant(false, "B11", "offset write for an owner of unknown type %T", o)
	}
}

// writeOffsets appends w's offset records (a nil value deletes) and hands its owner
// the outcome (offsetWriteEnded) once they are durable (0) or failed (the error for
// the client). It never reports 0 before the high-water mark covers the batch. The
// replica manager appends (msgAppendInternal) and answers msgAppended.
func (gc *groupCoordinator) writeOffsets(w *offsetWrite) {
	if len(w.kvs) == 0 {
		gc.offsetWriteEnded(w, 0)
		return
	}
	if gc.groups.parts == 0 {
		if gc.groups.nWrite+len(gc.groups.created) >= maxOffsetWrites {
			gc.offsetWriteEnded(w, kerr.CoordinatorNotAvailable.Code)
			return
		}
		gc.groups.created = append(gc.groups.created, w) // offsetsCreationEnded
		gc.ensureOffsetsTopic()
		return
	}
	tp := gc.offsetsPartition(w.group)
	if s, assigned := gc.assignedState(tp); assigned {
		// Only a loaded leader writes: a loading one would append past the end it loads
		// to, a former one into a log it no longer leads (groups_load.go).
		if code := gc.ownerCode(tp, s); code != 0 {
			gc.offsetWriteEnded(w, code)
			return
		}
	}
	gc.post(msgAppendInternal{write: w, tp: tp,
		overloaded: gc.groups.nWrite >= maxOffsetWrites,
		batch:      batch.Build(w.kvs, batch.NoProducer, gc.now.Millis())})
}

// offsetsAppended records where an offset write went, or ends it with its error.
func (gc *groupCoordinator) offsetsAppended(m msgAppended) {
	w := m.write
	if m.code != 0 {
		gc.hit(pOffsetWriteFailed)
		gc.offsetWriteEnded(w, offsetWriteError(m.code))
		return
	}
	w.tp, w.offset, w.appended, w.kvs = m.tp, m.offset, true, nil
	gc.groups.writes[m.tp] = append(gc.groups.writes[m.tp], w)
	gc.groups.nWrite++
}

// offsetWritesDurable completes the writes on tp that the high-water mark (m.hwm) now
// covers, in append order: NOT_ENOUGH_REPLICAS_AFTER_APPEND (for the client,
// COORDINATOR_NOT_AVAILABLE) when the ISR shrank below min.insync.replicas meanwhile,
// as a produce. A partition loading as its new leader may now be loaded.
func (gc *groupCoordinator) offsetWritesDurable(m msgDurable) {
	if m.tp.Topic == group.OffsetsTopic {
		gc.tryLoadOffsets(m.tp)
	}
	tp, ws := m.tp, gc.groups.writes[m.tp]
	i := 0
	for i < len(ws) && m.hwm >= ws[i].offset {
		i++
	}
	if i == 0 {
		return
	}
	gc.storeOffsetWrites(tp, ws[i:])
	code := int16(0)
	if m.short {
		gc.hit(pOffsetsNotEnoughISR)
		code = offsetWriteError(kerr.NotEnoughReplicasAfterAppend.Code)
	}
	for _, w := range ws[:i] {
		gc.offsetWriteEnded(w, code)
	}
}

// offsetWritesFailed fails every write waiting on tp (msgPartitionFailed).
func (gc *groupCoordinator) offsetWritesFailed(tp core.TopicPartition, code int16) {
	ws := gc.groups.writes[tp]
	gc.storeOffsetWrites(tp, nil)
	for _, w := range ws {
		gc.offsetWriteEnded(w, offsetWriteError(code))
	}
}

func (gc *groupCoordinator) storeOffsetWrites(tp core.TopicPartition, rest []*offsetWrite) {
	gc.groups.nWrite -= len(gc.groups.writes[tp]) - len(rest)
	if len(rest) == 0 {
		delete(gc.groups.writes, tp)
		return
	}
	gc.groups.writes[tp] = rest
}

// offsetWriteError maps a storage error to what Kafka answers for a failed commit.
func offsetWriteError(code int16) int16 {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.InvalidCommitOffsetSize.Code
	}
	return code
}

// describeWrite says what a write is and waits for, for Pending.
func describeWrite(w *offsetWrite) string {
	s := fmt.Sprintf("group=%q records=%d", w.group, w.n)
	if w.appended {
		s += fmt.Sprintf(" waits hwm>=%d on %s", w.offset, w.tp)
	} else {
		s += " waits for the offsets topic"
	}
	return s
}

// logWriteFailure is shared by the broker's own writes whose failure only gets logged.
func (gc *groupCoordinator) logWriteFailure(msg, groupID string, code int16) {
	gc.lg.Warn(msg, zap.String("group", groupID), zap.Int16("code", code))
}

// chunkBatchBytes bounds one batch of the broker's own tombstones (expiry, deleted
// topics), well under max.message.bytes.
const chunkBatchBytes = 256 << 10

// chunkRecords splits records into batches of at most chunkBatchBytes (roughly).
func chunkRecords(kvs []batch.KV) [][]batch.KV {
	var out [][]batch.KV
	start, size := 0, 0
	for i, kv := range kvs {
		n := len(kv.Key) + len(kv.Value) + 16 // plus record framing, roughly
		if i > start && size+n > chunkBatchBytes {
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
