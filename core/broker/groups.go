package broker

// Broker-side glue of the group coordinator (core/group): settings, the internal
// __consumer_offsets topic, durable offset writes, per-group timers and routing.
//
// Committed offsets live in __consumer_offsets as in Kafka: a group's commits go to
// partition FNV-1a(group) mod offsets.topic.num.partitions, as one uncompressed batch
// per request. The coordinator's table only changes once the batch is durable (the
// high-water mark covers it), so OffsetFetch never shows an offset a crash could take
// back; OffsetCommit is answered then too. Group membership is stored in the same
// partition as Kafka's GroupMetadata records (core/group/metadata.go), written through
// the same durable path when a generation's assignment is set (SyncGroup is answered
// once the record is durable) and when a group becomes Empty, and tombstoned when the
// group is deleted. At Start every partition of the topic is replayed from its log
// start to rebuild the offsets and the groups: a Stable group comes back Stable with
// its generation and members, whose sessions restart then. Offsets of groups without
// members expire (groups_expire.go).

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
)

const (
	// maxOffsetWrites bounds offset writes waiting for durability; past it commits get
	// COORDINATOR_NOT_AVAILABLE (retriable).
	maxOffsetWrites = 10_000
	// replayReadBytes is how much of an offsets partition one replay read takes.
	replayReadBytes = 1 << 20
)

// GroupConfig holds the group coordinator's settings.
type GroupConfig struct {
	OffsetsPartitions int32 // offsets.topic.num.partitions (Kafka: 50)
	MetadataMaxBytes  int   // offset.metadata.max.bytes
	Coordinator       group.Config
	// CompactAfterRecords is how many records an offsets partition takes before it may
	// be rewritten to its live offsets (groups_compact.go).
	CompactAfterRecords int
	// RetentionCheckIntervalMs is how often expired offsets are looked for
	// (offsets.retention.check.interval.ms; groups_expire.go). The retention itself,
	// offsets.retention.minutes, is Coordinator.OffsetsRetentionMs.
	RetentionCheckIntervalMs int64
}

// DefaultGroupConfig returns Kafka's defaults, except 8 offsets partitions: a single
// node gains nothing from 50 logs.
func DefaultGroupConfig() GroupConfig {
	return GroupConfig{OffsetsPartitions: 8, MetadataMaxBytes: 4096,
		Coordinator: group.DefaultConfig(), CompactAfterRecords: 50_000,
		RetentionCheckIntervalMs: 600_000}
}

// groupSettingNames lists the names GroupConfig.set accepts.
var groupSettingNames = []string{"offsets.topic.num.partitions", "offset.metadata.max.bytes",
	"group.min.session.timeout.ms", "group.max.session.timeout.ms",
	"group.initial.rebalance.delay.ms", "group.max.size", "offsets.retention.minutes",
	"offsets.retention.check.interval.ms"}

// set applies one setting; ok is false when name is not a group setting.
func (c *GroupConfig) set(name, value string) (ok bool, err error) {
	known := false
	for _, s := range groupSettingNames {
		known = known || s == name
	}
	if !known {
		return false, nil
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil || n < 0 {
		return true, fmt.Errorf("%s: not a non-negative number: %q", name, value)
	}
	if n < 1 && (name == "offsets.topic.num.partitions" || name == "group.max.size" ||
		name == "offsets.retention.minutes" || name == "offsets.retention.check.interval.ms") {
		return true, fmt.Errorf("%s: must be at least 1", name)
	}
	switch name {
	case "offsets.topic.num.partitions":
		c.OffsetsPartitions = int32(n)
	case "offset.metadata.max.bytes":
		c.MetadataMaxBytes = int(n)
	case "group.min.session.timeout.ms":
		c.Coordinator.MinSessionTimeoutMs = int32(n)
	case "group.max.session.timeout.ms":
		c.Coordinator.MaxSessionTimeoutMs = int32(n)
	case "group.initial.rebalance.delay.ms":
		c.Coordinator.InitialRebalanceDelayMs = int32(n)
	case "group.max.size":
		c.Coordinator.MaxSize = int(n)
	case "offsets.retention.minutes":
		c.Coordinator.OffsetsRetentionMs = n * 60_000
	case "offsets.retention.check.interval.ms":
		c.RetentionCheckIntervalMs = n
	}
	return true, nil
}

// groupsState is the broker's part of the group coordinator.
type groupsState struct {
	coord *group.Coordinator
	// parts is the partition count of the offsets topic once it exists and was
	// replayed; 0 before. Like Kafka, the topic is created on first need (a
	// FindCoordinator or a commit), so a node that never sees a group never has it.
	parts    int32
	creating bool           // the topic's creation is proposed
	created  []*offsetWrite // writes waiting for the creation, run when it ends either way
	timers   map[string]groupTimer
	writes   map[core.TopicPartition][]*offsetWrite // in append order
	nWrite   int
	compact  compactState
	parked   map[parkedKey]parkedGroupReq // JoinGroup/SyncGroup held by groups (groups_parked.go)
}

// groupTimer is the one live timer of a group.
type groupTimer struct {
	id uint64
	at core.Time
}

// isInternalTopic reports topics that only the broker writes.
func isInternalTopic(name string) bool { return name == group.OffsetsTopic }

// startGroups creates the coordinator and rebuilds committed offsets from the offsets
// topic, if there is one yet.
func (b *Broker) startGroups() {
	gcfg := b.cfg.Groups.Coordinator
	gcfg.Probes = b.probes
	b.groups.coord = group.NewCoordinator(gcfg, b.rnd)
	b.groups.timers = map[string]groupTimer{}
	b.groups.writes = map[core.TopicPartition][]*offsetWrite{}
	b.groups.compact = compactState{since: map[core.TopicPartition]int{},
		running: map[core.TopicPartition]bool{}}
	if t := b.image.Topic(group.OffsetsTopic); t != nil {
		b.hit(pOffsetsLoaded)
		b.loadOffsets(t)
		b.purgeOrphanOffsets()
	}
	b.armOffsetExpiry()
}

// ensureOffsetsTopic starts creating the offsets topic unless it exists or is being
// created; then runs every queued write. The creation goes through the admin queue so
// that no client CreateTopics races it.
func (b *Broker) ensureOffsetsTopic() {
	if b.groups.parts > 0 || b.groups.creating {
		return
	}
	if len(b.admin.queue) >= maxQueuedAdmin {
		b.offsetsCreationEnded() // overloaded: fail the waiting writes; a retry tries again
		return
	}
	b.groups.creating = true
	b.serialize(&opOffsetsTopic{})
}

// createOffsetsTopic proposes the offsets topic, unless it exists by now.
func (b *Broker) createOffsetsTopic(op *opOffsetsTopic) {
	if b.image.Topic(group.OffsetsTopic) != nil {
		// Created meanwhile: by a client, or our own proposal answered "outcome
		// unknown" that committed after all. Its logs may still be opening.
		op.existed = true
		b.afterOpens(op)
		return
	}
	// Then afterOpens: its partitions' logs (open_queue.go); then offsetsTopicOpened.
	b.proposeAll(op, []meta.Record{b.offsetsTopicRecord()})
}

// offsetsTopicOpened loads the offsets topic once it exists and its logs are open, then
// runs the writes that waited for it.
func (b *Broker) offsetsTopicOpened(op *opOffsetsTopic) {
	t := b.image.Topic(group.OffsetsTopic)
	switch {
	case op.existed:
		if t != nil {
			b.loadOffsets(t)
		}
	case op.errs[0] == nil && t != nil:
		b.hit(pOffsetsTopicCreate)
		b.loadOffsets(t)
	default:
		b.lg.Error("cannot create the offsets topic", zap.Error(op.errs[0]))
	}
	b.adminFinished(op)
	b.offsetsCreationEnded()
}

// offsetsCreationEnded runs the writes that waited for the offsets topic; they fail
// (retriably) if it still does not exist.
func (b *Broker) offsetsCreationEnded() {
	b.groups.creating = false
	waiting := b.groups.created
	b.groups.created = nil
	for _, w := range waiting {
		if b.groups.parts == 0 {
			b.offsetWriteEnded(w, kerr.CoordinatorNotAvailable.Code) // clients retry
			continue
		}
		b.writeOffsets(w)
	}
}

func (b *Broker) offsetsTopicRecord() meta.Record {
	return meta.Record{Kind: meta.KindTopicCreated, Topic: group.OffsetsTopic,
		TopicID: b.newTopicID(), Partitions: b.cfg.Groups.OffsetsPartitions,
		ReplicationFactor: 1,
		// Durable before answered, never removed by log retention (offsets expire
		// through the coordinator, groups_expire.go), segments of Kafka's
		// offsets.topic.segment.bytes.
		Configs: []meta.Config{{Name: "log.flush.policy", Value: "always"},
			{Name: "retention.bytes", Value: "-1"}, {Name: "retention.ms", Value: "-1"},
			{Name: "segment.bytes", Value: "104857600"}}}
}

// loadOffsets replays every partition of the offsets topic into the coordinator.
func (b *Broker) loadOffsets(t *meta.Topic) {
	n := 0
	for p := int32(0); p < t.Partitions; p++ {
		n += b.replayOffsets(core.TopicPartition{Topic: t.Name, Partition: p})
	}
	b.groups.parts = t.Partitions
	b.groups.coord.MarkRecovered()
	for _, id := range b.groups.coord.GroupIDs() {
		b.groupChanged(id) // restored members' sessions need their timers
	}
	b.lg.Info("consumer group offsets loaded", zap.Int("records", n),
		zap.Int("groups", len(b.groups.coord.GroupIDs())))
}

// replayOffsets applies one offsets partition from its log start to its high-water
// mark and returns how many records it applied. A partition that cannot be read is
// logged and skipped: its groups get errors, the others work.
func (b *Broker) replayOffsets(tp core.TopicPartition) int {
	rep := b.replicas[tp]
	if rep == nil {
		b.lg.Error("offsets partition not hosted; its groups are unavailable",
			zap.Stringer("tp", tp))
		return 0
	}
	n := 0
	defer func() { b.groups.compact.since[tp] = n }()
	for off := rep.StartOffset(); off < rep.HighWatermark(); {
		res := rep.Read(off, replayReadBytes)
		next := off
		err := errors.New("nothing read")
		if res.Err == 0 && len(res.Records) > 0 {
			err = batch.Split(res.Records, func(h batch.Header, raw []byte) error {
				if h.NextOffset() > off {
					n += b.replayBatch(tp, raw)
					next = h.NextOffset()
				}
				return nil
			})
		}
		if err != nil || next == off {
			b.hit(pOffsetsReplayStopped)
			b.lg.Error("offsets partition replay stopped", zap.Stringer("tp", tp),
				zap.Int64("offset", off), zap.Int16("code", res.Err), zap.Error(err))
			return n
		}
		off = next
	}
	return n
}

func (b *Broker) replayBatch(tp core.TopicPartition, raw []byte) int {
	kvs, err := batch.Records(raw)
	if err != nil {
		b.lg.Warn("unreadable batch in the offsets topic", zap.Stringer("tp", tp),
			zap.Error(err))
		return 0
	}
	n := 0
	for _, kv := range kvs {
		if gid, ok, err := group.DecodeGroupKey(kv.Key); ok {
			if err = b.replayGroupMetadata(gid, kv.Value, err); err != nil {
				b.lg.Warn("unreadable group metadata in the offsets topic",
					zap.Stringer("tp", tp), zap.Error(err))
			} else {
				n++
			}
			continue
		}
		gid, otp, err := group.DecodeKey(kv.Key)
		if err == nil && kv.Value != nil {
			var o group.Offset
			if o, err = group.DecodeValue(kv.Value); err == nil {
				b.groups.coord.ApplyOffset(gid, otp, &o)
			}
		} else if err == nil {
			b.groups.coord.ApplyOffset(gid, otp, nil)
		}
		switch {
		case err == nil:
			n++
		case !errors.Is(err, group.ErrNotOffsetRecord):
			b.lg.Warn("unreadable record in the offsets topic", zap.Stringer("tp", tp),
				zap.Error(err))
		}
	}
	return n
}

// replayGroupMetadata restores a group from one metadata record (nil value: deleted).
func (b *Broker) replayGroupMetadata(gid string, value []byte, keyErr error) error {
	if keyErr != nil {
		return keyErr
	}
	if value == nil {
		b.groups.coord.Restore(b.now, gid, nil, nil)
		return nil
	}
	v, err := group.DecodeGroupValue(value)
	if err != nil {
		return err
	}
	b.groups.coord.Restore(b.now, gid, &v, value)
	return nil
}

// offsetsPartition is the offsets partition that holds a group's commits.
func (b *Broker) offsetsPartition(groupID string) core.TopicPartition {
	return core.TopicPartition{Topic: group.OffsetsTopic,
		Partition: group.Partition(groupID, b.groups.parts)}
}

// coordinatorCode says whether this node can serve a group now (0), or which
// retriable error the client should get: the group's offsets partition is offline.
func (b *Broker) coordinatorCode(groupID string) int16 {
	if b.groups.parts == 0 {
		return 0 // no offsets yet; the first write creates the topic
	}
	if rep := b.replicas[b.offsetsPartition(groupID)]; rep == nil || rep.Offline() {
		b.hit(pCoordinatorUnavailable)
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

// groupChanged forgets a group left with nothing in it, re-arms its timer and writes
// its metadata if it changed so (persistGroup). Every handler calls it after touching
// a group.
func (b *Broker) groupChanged(id string) {
	b.groups.coord.Collect(id)
	defer b.persistGroup(id) // after the timer: its callback may re-enter here
	var at core.Time
	ok := false
	if g := b.groups.coord.Group(id); g != nil {
		at, ok = g.NextDeadline()
	}
	t, armed := b.groups.timers[id]
	if armed && (!ok || at < t.at) {
		b.cancelTimer(t.id)
		delete(b.groups.timers, id)
		armed = false
	}
	// A timer armed earlier than needed stays: it fires, ticks for nothing, re-arms.
	if !ok || armed {
		return
	}
	tid := b.setTimer(at, brokerTimer{kind: timerGroup, group: id})
	b.groups.timers[id] = groupTimer{id: tid, at: at}
}

// persistGroup appends the metadata record the group wants written, if any, and
// reports the outcome to it once durable or failed (SyncGroup answers wait on it).
func (b *Broker) persistGroup(id string) {
	g := b.groups.coord.Group(id)
	if g == nil {
		return
	}
	w, ok := g.TakeMetadataWrite(b.now)
	if !ok {
		return
	}
	kvs := []batch.KV{{Key: group.EncodeGroupKey(id), Value: w.Value}}
	b.writeOffsets(b.newOffsetWrite(id, kvs, &groupMetadataOwner{g: g, w: w}))
}

func (b *Broker) groupTimerFired(id string) {
	delete(b.groups.timers, id)
	if g := b.groups.coord.Group(id); g != nil {
		g.Tick(b.now)
	}
	b.groupChanged(id)
}

// routeGroupRequest handles the group APIs; false when r is not one of them.
func (b *Broker) routeGroupRequest(r Request) bool {
	switch m := r.Msg.(type) {
	case *kmsg.FindCoordinatorRequest:
		b.reply(r, b.handleFindCoordinator(m))
	case *kmsg.JoinGroupRequest:
		b.handleJoinGroup(r, m)
	case *kmsg.SyncGroupRequest:
		b.handleSyncGroup(r, m)
	case *kmsg.HeartbeatRequest:
		b.reply(r, b.handleHeartbeat(m))
	case *kmsg.LeaveGroupRequest:
		b.reply(r, b.handleLeaveGroup(m))
	case *kmsg.OffsetCommitRequest:
		b.handleOffsetCommit(r, m)
	case *kmsg.OffsetFetchRequest:
		b.reply(r, b.handleOffsetFetch(m))
	case *kmsg.DescribeGroupsRequest:
		b.reply(r, b.handleDescribeGroups(m))
	case *kmsg.ListGroupsRequest:
		b.reply(r, b.handleListGroups(m))
	case *kmsg.DeleteGroupsRequest:
		b.handleDeleteGroups(r, m)
	case *kmsg.OffsetDeleteRequest:
		b.handleOffsetDelete(r, m)
	default:
		return false
	}
	return true
}
