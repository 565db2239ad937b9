package broker

// Offset writes as typed records.
//
// Every append to __consumer_offsets is one offsetWrite: the group it belongs to, its
// records (until appended), the offset that makes it durable, and its owner, which
// says what the outcome is for: a client's OffsetCommit, OffsetDelete or DeleteGroups,
// a group's metadata record, an offsets snapshot (groups_compact.go), an expiry or
// sweep (groups_expire.go), or a topic deletion's tombstones (groups_topics.go). A
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

// snapshotOwner is an offsets snapshot (groups_compact.go).
type snapshotOwner struct {
	incarnation uint64
	start       int64
	live        int
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
func (*snapshotOwner) ownerName() string      { return "offsets-snapshot" }
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
func (b *Broker) newOffsetWrite(groupID string, kvs []batch.KV, owner writeOwner) *offsetWrite {
	return &offsetWrite{group: groupID, kvs: kvs, n: len(kvs), since: b.now, owner: owner}
}

// offsetWriteEnded hands a write's outcome to its owner: 0 when durable, otherwise
// the error for the client.
func (b *Broker) offsetWriteEnded(w *offsetWrite, code int16) {
	switch o := w.owner.(type) {
	case *commitOwner:
		b.commitWritten(w.group, o, code)
	case *offsetDeleteOwner:
		b.offsetDeleteWritten(w.group, o, code)
	case *deleteGroupOwner:
		b.groupDeleteWritten(w.group, o, code)
	case *groupMetadataOwner:
		o.g.MetadataWritten(b.now, o.w, code)
		b.groupChanged(w.group)
	case *snapshotOwner:
		b.offsetsSnapshotDone(w.tp, o.incarnation, o.start, o.live, code)
	case *expireOwner:
		b.expiryWritten(w.group, o.part, code)
	case *sweepOwner:
		b.sweepWritten(w.group, code)
	case *tombstoneOwner:
		b.tombstonesWritten(w.group, o, code)
	default:
		core.Invariant(false, "B11", "offset write for an owner of unknown type %T", o)
	}
}

// writeOffsets appends w's offset records (a nil value deletes) and hands its owner
// the outcome (offsetWriteEnded) once they are durable (0) or failed (the error for
// the client). It never reports 0 before the high-water mark covers the batch.
func (b *Broker) writeOffsets(w *offsetWrite) {
	if len(w.kvs) == 0 {
		b.offsetWriteEnded(w, 0)
		return
	}
	if b.groups.parts == 0 {
		if b.groups.nWrite+len(b.groups.created) >= maxOffsetWrites {
			b.offsetWriteEnded(w, kerr.CoordinatorNotAvailable.Code)
			return
		}
		b.groups.created = append(b.groups.created, w) // offsetsCreationEnded
		b.ensureOffsetsTopic()
		return
	}
	tp := b.offsetsPartition(w.group)
	rep, code := b.replicaFor(tp)
	if code == 0 && b.groups.nWrite >= maxOffsetWrites {
		code = kerr.RequestTimedOut.Code
	}
	if code != 0 {
		b.hit(pOffsetWriteFailed)
		b.offsetWriteEnded(w, offsetWriteError(code))
		return
	}
	res := rep.Append(b.now.Millis(), batch.Build(w.kvs, batch.NoProducer, b.now.Millis()))
	if res.Err != 0 && rep.Offline() {
		// As a produce does: the write took the log offline, so the writes waiting for
		// a sync will never be durable (the log dropped them); answer them now.
		b.partitionFailed(tp, kerr.KafkaStorageError.Code)
	}
	if res.Err != 0 {
		b.hit(pOffsetWriteFailed)
		b.offsetWriteEnded(w, offsetWriteError(res.Err))
		return
	}
	w.tp, w.offset, w.appended, w.kvs = tp, res.WaitOffset, true, nil
	b.groups.writes[tp] = append(b.groups.writes[tp], w)
	b.groups.nWrite++
	b.groups.compact.since[tp] += w.n
	b.produces.dirty = append(b.produces.dirty, tp)
	b.requestSyncs()
	b.offsetWritesDurable(tp)
}

// offsetWritesDurable completes the writes on tp that the high-water mark now covers,
// in append order. Called from hwmAdvanced.
func (b *Broker) offsetWritesDurable(tp core.TopicPartition) {
	ws := b.groups.writes[tp]
	rep := b.replicas[tp]
	if rep == nil {
		return
	}
	covered := rep.HighWatermark
	if mutantOn("commit-before-durable") {
		covered = rep.EndOffset
	}
	i := 0
	for i < len(ws) && covered() >= ws[i].offset {
		i++
	}
	if i == 0 {
		return
	}
	b.storeOffsetWrites(tp, ws[i:])
	for _, w := range ws[:i] {
		b.offsetWriteEnded(w, 0)
	}
	b.maybeCompactOffsets(tp)
}

// offsetWritesFailed fails every write waiting on tp. Called from partitionFailed.
func (b *Broker) offsetWritesFailed(tp core.TopicPartition, code int16) {
	ws := b.groups.writes[tp]
	b.storeOffsetWrites(tp, nil)
	for _, w := range ws {
		b.offsetWriteEnded(w, offsetWriteError(code))
	}
}

func (b *Broker) storeOffsetWrites(tp core.TopicPartition, rest []*offsetWrite) {
	b.groups.nWrite -= len(b.groups.writes[tp]) - len(rest)
	if len(rest) == 0 {
		delete(b.groups.writes, tp)
		return
	}
	b.groups.writes[tp] = rest
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
func (b *Broker) logWriteFailure(msg, groupID string, code int16) {
	b.lg.Warn(msg, zap.String("group", groupID), zap.Int16("code", code))
}
