package broker

// OffsetCommit (API key 8), versions 0–8.
//
// Behaviour: stores a group's offsets durably (groups.go) and answers once they are:
// one batch per request in the group's __consumer_offsets partition, answered when the
// high-water mark (with the default log.flush.policy=always: the fsync) covers it.
//
// Who may commit (Kafka's rules): a member of the current generation; or anyone with
// generation -1 (and v0, which has no generation) while the group has no members —
// simple consumers and admin tools; a group that does not exist is created by such a
// commit. During CompletingRebalance → REBALANCE_IN_PROGRESS; unknown member →
// UNKNOWN_MEMBER_ID; another generation (or a non-existent group with a generation) →
// ILLEGAL_GENERATION; fenced static member → FENCED_INSTANCE_ID. A valid commit counts
// as a heartbeat. Per partition: unknown topic or partition →
// UNKNOWN_TOPIC_OR_PARTITION; metadata longer than offset.metadata.max.bytes →
// OFFSET_METADATA_TOO_LARGE. Storage failures map as Kafka maps them
// (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, INVALID_COMMIT_OFFSET_SIZE).
//
// Expiry (groups_expire.go): a v2–v4 retention time other than -1 makes the offset
// expire at commit time + retention time (stored in the record, value v1) instead of
// after offsets.retention.minutes, as Kafka does. The v1 per-partition commit timestamp
// is ignored, as Kafka's current coordinator ignores it: the commit time is always the
// broker's, so a client cannot date an offset into the past or the future.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
)

// pendingCommit is one partition of a commit waiting for durability.
type pendingCommit struct {
	tp     core.TopicPartition
	offset group.Offset
	part   *kmsg.OffsetCommitResponseTopicPartition
}

func (gc *groupCoordinator) handleOffsetCommit(r Request, m *kmsg.OffsetCommitRequest) {
	resp := m.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range m.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	code := gc.commitAllowed(m)
	expireMs := commitExpiry(m, gc.now.Millis())
	var pending []pendingCommit
	var kvs []batch.KV
	for ti, t := range m.Topics {
		for pi, p := range t.Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			if rp.ErrorCode = code; code != 0 {
				continue
			}
			pc := pendingCommit{tp: core.TopicPartition{Topic: t.Topic, Partition: p.Partition},
				part: rp, offset: group.Offset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch,
					CommitMs: gc.now.Millis(), ExpireMs: expireMs}}
			if p.Metadata != nil {
				pc.offset.Metadata = *p.Metadata
			}
			if rp.ErrorCode = gc.commitPartitionCode(pc); rp.ErrorCode != 0 {
				continue
			}
			pending = append(pending, pc)
			kvs = append(kvs, batch.KV{Key: group.EncodeKey(m.Group, pc.tp),
				Value: group.EncodeValue(pc.offset)})
		}
	}
	tps := make([]core.TopicPartition, len(pending))
	for i, pc := range pending {
		tps[i] = pc.tp
	}
	gc.groups.coord.WriteStarted(m.Group, tps) // no expiry tombstone may overtake it
	gc.writeOffsets(gc.newOffsetWrite(m.Group, kvs, &commitOwner{req: r, resp: resp, tps: tps,
		pending: pending}))
}

// commitWritten applies a commit's offsets once durable and answers it.
func (gc *groupCoordinator) commitWritten(groupID string, o *commitOwner, code int16) {
	gc.groups.coord.WriteEnded(groupID, o.tps)
	for _, pc := range o.pending {
		if code != 0 && !mutantOn("commit-ignores-write-error") {
			pc.part.ErrorCode = code
			continue
		}
		off := pc.offset
		gc.groups.coord.ApplyOffset(groupID, pc.tp, &off)
	}
	gc.reply(o.req, o.resp)
}

// commitExpiry is the explicit expiry time a v2–v4 commit asks for, 0 for none.
func commitExpiry(m *kmsg.OffsetCommitRequest, nowMs int64) int64 {
	if m.Version < 2 || m.Version > 4 || m.RetentionTimeMillis == -1 {
		return 0
	}
	// At least 1: 0 means "none". A negative retention expires at the next check.
	return max(satAddMs(nowMs, m.RetentionTimeMillis), 1)
}

// satAddMs adds without wrapping around.
func satAddMs(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// commitAllowed checks the request as a whole: coordinator, group and member.
func (gc *groupCoordinator) commitAllowed(m *kmsg.OffsetCommitRequest) int16 {
	if code := gc.coordinatorCode(m.Group); code != 0 {
		return code
	}
	if len(m.Group) > math.MaxInt16 {
		return kerr.InvalidGroupID.Code // the record key holds it with an int16 length
	}
	g := gc.groups.coord.Group(m.Group)
	if g == nil {
		if m.Generation < 0 {
			return 0
		}
		return kerr.IllegalGeneration.Code
	}
	code := g.CheckCommit(gc.now, m.Generation, m.MemberID, m.InstanceID)
	gc.groupChanged(m.Group) // the commit was a heartbeat
	return code
}

func (gc *groupCoordinator) commitPartitionCode(pc pendingCommit) int16 {
	t := gc.image.Topic(pc.tp.Topic)
	switch {
	case t == nil || pc.tp.Partition < 0 || pc.tp.Partition >= t.Partitions:
		return kerr.UnknownTopicOrPartition.Code
	case len(pc.offset.Metadata) > min(gc.cfg.Groups.MetadataMaxBytes, math.MaxInt16):
		return kerr.OffsetMetadataTooLarge.Code
	}
	return 0
}
