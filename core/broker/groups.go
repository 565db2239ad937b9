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
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
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
	// OffsetsReplicationFactor is offsets.topic.replication.factor (Kafka's 3): the
	// offsets topic's replicas with a metadata quorum, capped to the live brokers; a
	// node without a quorum always creates it with one.
	OffsetsReplicationFactor int16
	MetadataMaxBytes         int // offset.metadata.max.bytes
	Coordinator              group.Config
	// OffsetsSegmentBytes is offsets.topic.segment.bytes, the segment.bytes the offsets
	// topic is created with (Kafka: 100 MiB): the cleaner only compacts closed
	// segments, so this bounds how much of a partition waits uncompacted.
	OffsetsSegmentBytes int64
	// RetentionCheckIntervalMs is how often expired offsets are looked for
	// (offsets.retention.check.interval.ms; groups_expire.go). The retention itself,
	// offsets.retention.minutes, is Coordinator.OffsetsRetentionMs.
	RetentionCheckIntervalMs int64
}

// DefaultGroupConfig returns Kafka's defaults, except 8 offsets partitions: a single
// node gains nothing from 50 logs.
func DefaultGroupConfig() GroupConfig {
	return GroupConfig{OffsetsPartitions: 8, OffsetsReplicationFactor: 3,
		MetadataMaxBytes: 4096,
		Coordinator:      group.DefaultConfig(), OffsetsSegmentBytes: 100 << 20,
		RetentionCheckIntervalMs: 600_000}
}

// groupSettingNames lists the names GroupConfig.set accepts.
var groupSettingNames = []string{"offsets.topic.num.partitions",
	"offsets.topic.replication.factor", "offset.metadata.max.bytes",
	"group.min.session.timeout.ms", "group.max.session.timeout.ms",
	"group.initial.rebalance.delay.ms", "group.max.size", "offsets.retention.minutes",
	"offsets.retention.check.interval.ms", "offsets.topic.segment.bytes"}

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
	if name == "offsets.topic.replication.factor" && (n < 1 || n > math.MaxInt16) {
		return true, fmt.Errorf("%s: %d is outside [1, %d]", name, n, math.MaxInt16)
	}
	if name == "offsets.topic.segment.bytes" && n < minSegmentBytes {
		return true, fmt.Errorf("%s: must be at least %d", name, minSegmentBytes)
	}
	if n < 1 && (name == "offsets.topic.num.partitions" || name == "group.max.size" ||
		name == "offsets.retention.minutes" || name == "offsets.retention.check.interval.ms") {
		return true, fmt.Errorf("%s: must be at least 1", name)
	}
	switch name {
	case "offsets.topic.num.partitions":
		c.OffsetsPartitions = int32(n)
	case "offsets.topic.replication.factor":
		c.OffsetsReplicationFactor = int16(n)
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
	case "offsets.topic.segment.bytes":
		c.OffsetsSegmentBytes = n
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
	parked   map[parkedKey]parkedGroupReq // JoinGroup/SyncGroup held by groups (groups_parked.go)
	// owned holds the partitions of an assigned offsets topic this node leads, loading
	// or loaded (groups_load.go); unused for an unassigned one.
	owned map[int32]*offsetsLoad
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
func (gc *groupCoordinator) startGroups() {
	gcfg := gc.cfg.Groups.Coordinator
	gcfg.Probes = gc.probes
	gc.groups.coord = group.NewCoordinator(gcfg, gc.rnd)
	gc.groups.timers = map[string]groupTimer{}
	gc.groups.writes = map[core.TopicPartition][]*offsetWrite{}
	if t := gc.image.Topic(group.OffsetsTopic); t != nil {
		gc.hit(pOffsetsLoaded)
		gc.loadOffsets(t.Partitions)
		if !gc.offsetsAssigned() {
			gc.purgeOrphanOffsets() // an assigned partition purges as it loads
		}
	}
	gc.armOffsetExpiry()
}

// ensureOffsetsTopic asks the admin queue to create the offsets topic
// (msgEnsureOffsetsTopic) unless it exists or is being created; msgOffsetsTopicEnded
// then runs every queued write.
func (gc *groupCoordinator) ensureOffsetsTopic() {
	if gc.groups.parts > 0 || gc.groups.creating {
		return
	}
	gc.groups.creating = true
	gc.post(msgEnsureOffsetsTopic{})
}

// offsetsCreationEnded runs the writes that waited for the offsets topic; they fail
// (retriably) if it still does not exist.
func (gc *groupCoordinator) offsetsCreationEnded() {
	gc.groups.creating = false
	waiting := gc.groups.created
	gc.groups.created = nil
	for _, w := range waiting {
		if gc.groups.parts == 0 {
			gc.offsetWriteEnded(w, kerr.CoordinatorNotAvailable.Code) // clients retry
			continue
		}
		gc.writeOffsets(w)
	}
}

// loadOffsets replays every partition of the offsets topic into the coordinator; an
// assigned one only as this node leads its partitions (groups_load.go).
func (gc *groupCoordinator) loadOffsets(partitions int32) {
	if gc.offsetsAssigned() {
		gc.takeOffsetsRoles(partitions)
		return
	}
	n := 0
	for p := int32(0); p < partitions; p++ {
		n += gc.replayOffsets(core.TopicPartition{Topic: group.OffsetsTopic, Partition: p})
	}
	gc.groups.parts = partitions
	gc.groups.coord.MarkRecovered()
	for _, id := range gc.groups.coord.GroupIDs() {
		gc.groupChanged(id) // restored members' sessions need their timers
	}
	gc.lg.Info("consumer group offsets loaded", zap.Int("records", n),
		zap.Int("groups", len(gc.groups.coord.GroupIDs())))
}

// replayOffsets applies one offsets partition from its log start to its high-water
// mark and returns how many records it applied. A partition that cannot be read is
// logged and skipped: its groups get errors, the others work.
//
// The partition is compacted (cleaner.go): its log may start anywhere, and its batches
// may have offset gaps, fewer records than offsets, or none (a run of removed batches
// becomes one empty batch). Every batch is read with the stored-batch checks, and
// replay goes from each batch to the next by its last offset. Since the cleaner only
// removes a record whose key has a later record below the high-water mark, or a
// tombstone older than delete.retention.ms, the last record of every key is read
// whatever the cleaner did: the replayed table is the same as from the uncleaned log.
func (gc *groupCoordinator) replayOffsets(tp core.TopicPartition) int {
	pos, ok := gc.logs.position(tp)
	if !ok {
		gc.lg.Error("offsets partition not hosted; its groups are unavailable",
			zap.Stringer("tp", tp))
		return 0
	}
	n := 0
	for off := pos.start; off < pos.hwm; {
		res := gc.logs.readLog(tp, off, replayReadBytes)
		next := off
		err := errors.New("nothing read")
		if res.Err == 0 && len(res.Records) > 0 {
			err = batch.SplitStored(res.Records, func(h batch.Header, raw []byte) error {
				if h.NextOffset() > off {
					if int64(h.RecordCount) <= int64(h.LastOffsetDelta) {
						gc.hit(pOffsetsReplayedCleaned) // thinned or emptied by the cleaner
					}
					n += gc.replayBatch(tp, raw)
					next = h.NextOffset()
				}
				return nil
			})
		}
		if err != nil || next == off {
			gc.hit(pOffsetsReplayStopped)
			gc.lg.Error("offsets partition replay stopped", zap.Stringer("tp", tp),
				zap.Int64("offset", off), zap.Int16("code", res.Err), zap.Error(err))
			return n
		}
		off = next
	}
	return n
}

func (gc *groupCoordinator) replayBatch(tp core.TopicPartition, raw []byte) int {
	kvs, err := batch.StoredRecords(raw)
	if err != nil {
		gc.lg.Warn("unreadable batch in the offsets topic", zap.Stringer("tp", tp),
			zap.Error(err))
		return 0
	}
	n := 0
	for _, kv := range kvs {
		if gid, ok, err := group.DecodeGroupKey(kv.Key); ok {
			if err = gc.replayGroupMetadata(gid, kv.Value, err); err != nil {
				gc.lg.Warn("unreadable group metadata in the offsets topic",
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
				gc.groups.coord.ApplyOffset(gid, otp, &o)
			}
		} else if err == nil {
			gc.groups.coord.ApplyOffset(gid, otp, nil)
		}
		switch {
		case err == nil:
			n++
		case !errors.Is(err, group.ErrNotOffsetRecord):
			gc.lg.Warn("unreadable record in the offsets topic", zap.Stringer("tp", tp),
				zap.Error(err))
		}
	}
	return n
}

// replayGroupMetadata restores a group from one metadata record (nil value: deleted).
func (gc *groupCoordinator) replayGroupMetadata(gid string, value []byte, keyErr error) error {
	if keyErr != nil {
		return keyErr
	}
	if value == nil {
		gc.groups.coord.Restore(gc.now, gid, nil, nil)
		return nil
	}
	v, err := group.DecodeGroupValue(value)
	if err != nil {
		return err
	}
	gc.groups.coord.Restore(gc.now, gid, &v, value)
	return nil
}

// offsetsPartition is the offsets partition that holds a group's commits.
func (gc *groupCoordinator) offsetsPartition(groupID string) core.TopicPartition {
	return core.TopicPartition{Topic: group.OffsetsTopic,
		Partition: group.Partition(groupID, gc.groups.parts)}
}

// coordinatorCode says whether this node can serve a group now (0), or which
// retriable error the client should get: the group's offsets partition is offline, or
// (an assigned offsets topic, groups_load.go) led elsewhere, by nobody, or loading.
func (gc *groupCoordinator) coordinatorCode(groupID string) int16 {
	if gc.groups.parts == 0 {
		if !gc.offsetsClustered() {
			return 0 // no offsets yet; the first write creates the topic
		}
		gc.ensureOffsetsTopic() // may load it at once when it exists
		if gc.groups.parts == 0 {
			return kerr.CoordinatorNotAvailable.Code // as Kafka while it creates it
		}
	}
	tp := gc.offsetsPartition(groupID)
	if s, assigned := gc.assignedState(tp); assigned {
		if code := gc.ownerCode(tp, s); code != 0 {
			return code
		}
	}
	if pos, ok := gc.logs.position(tp); !ok || pos.offline {
		gc.hit(pCoordinatorUnavailable)
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

// groupChanged forgets a group left with nothing in it, re-arms its timer and writes
// its metadata if it changed so (persistGroup). Every handler calls it after touching
// a group.
func (gc *groupCoordinator) groupChanged(id string) {
	gc.groups.coord.Collect(id)
	defer gc.persistGroup(id) // after the timer: its callback may re-enter here
	var at core.Time
	ok := false
	if g := gc.groups.coord.Group(id); g != nil {
		at, ok = g.NextDeadline()
	}
	t, armed := gc.groups.timers[id]
	if armed && (!ok || at < t.at) {
		gc.cancelTimer(t.id)
		delete(gc.groups.timers, id)
		armed = false
	}
	// A timer armed earlier than needed stays: it fires, ticks for nothing, re-arms.
	if !ok || armed {
		return
	}
	tid := gc.setTimer(at, brokerTimer{kind: timerGroup, group: id})
	gc.groups.timers[id] = groupTimer{id: tid, at: at}
}

// persistGroup appends the metadata record the group wants written, if any, and
// reports the outcome to it once durable or failed (SyncGroup answers wait on it).
func (gc *groupCoordinator) persistGroup(id string) {
	g := gc.groups.coord.Group(id)
	if g == nil {
		return
	}
	w, ok := g.TakeMetadataWrite(gc.now)
	if !ok {
		return
	}
	kvs := []batch.KV{{Key: group.EncodeGroupKey(id), Value: w.Value}}
	gc.writeOffsets(gc.newOffsetWrite(id, kvs, &groupMetadataOwner{g: g, w: w}))
}

func (gc *groupCoordinator) groupTimerFired(id string) {
	delete(gc.groups.timers, id)
	if g := gc.groups.coord.Group(id); g != nil {
		g.Tick(gc.now)
	}
	gc.groupChanged(id)
}

// routeGroupRequest handles the group APIs; false when r is not one of them.
func (gc *groupCoordinator) routeGroupRequest(r Request) bool {
	switch m := r.Msg.(type) {
	case *kmsg.FindCoordinatorRequest:
		gc.reply(r, gc.handleFindCoordinator(r.Listener, m))
	case *kmsg.JoinGroupRequest:
		gc.handleJoinGroup(r, m)
	case *kmsg.SyncGroupRequest:
		gc.handleSyncGroup(r, m)
	case *kmsg.HeartbeatRequest:
		gc.reply(r, gc.handleHeartbeat(m))
	case *kmsg.LeaveGroupRequest:
		gc.reply(r, gc.handleLeaveGroup(m))
	case *kmsg.OffsetCommitRequest:
		gc.handleOffsetCommit(r, m)
	case *kmsg.OffsetFetchRequest:
		gc.reply(r, gc.handleOffsetFetch(m))
	case *kmsg.DescribeGroupsRequest:
		gc.reply(r, gc.handleDescribeGroups(m))
	case *kmsg.ListGroupsRequest:
		gc.reply(r, gc.handleListGroups(m))
	case *kmsg.DeleteGroupsRequest:
		gc.handleDeleteGroups(r, m)
	case *kmsg.OffsetDeleteRequest:
		gc.handleOffsetDelete(r, m)
	default:
		return false
	}
	return true
}
