package broker

// The group coordinator moves with the leadership of the __consumer_offsets partitions.
//
// When the offsets topic is assigned (placed by the controller, docs/controller.md),
// the coordinator of a group is the leader of the group's offsets partition, as in
// Kafka. This node coordinates only the partitions it leads, each in one of two phases:
//
//   - loading: it became the leader (applyRole posts msgOffsetsRole). Its log may hold
//     records past its high-water mark that an earlier leader acknowledged (a follower
//     learns the high-water mark one fetch late), or that nobody acknowledged and that
//     it now commits as leader. It waits until its high-water mark reaches the log end
//     it had when it became leader: then everything in its log is held by the whole
//     ISR, and it replays the partition up to the high-water mark. Group requests get
//     COORDINATOR_LOAD_IN_PROGRESS meanwhile, and nothing is written to the partition.
//   - loaded: it serves the partition's groups; writes are acknowledged once the ISR
//     holds them (the high-water mark, offset_writes.go), with min.insync.replicas of
//     the offsets topic checked before and after the append.
//
// A node that stops leading a partition (a new leader, no leader, or it left the
// replicas) fails the writes still waiting on it (NOT_COORDINATOR: they may or may not
// be in the next leader's log) and unloads its groups: their members, offsets and
// timers are forgotten, and parked JoinGroup and SyncGroup requests are answered
// NOT_COORDINATOR so that clients find the new coordinator. Requests for a group whose
// partition another node leads get NOT_COORDINATOR, and COORDINATOR_NOT_AVAILABLE
// while it has no leader; FindCoordinator names the leader.
//
// An unassigned offsets topic (a single node, the simulator's worlds) is loaded whole
// at start or creation, and this node coordinates every group, as before.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
)

// offsetsLoad is an offsets partition this node leads.
type offsetsLoad struct {
	epoch  int32     // the leader epoch it leads in
	end    int64     // its log end when it became leader: loaded once the hwm reaches it
	since  core.Time // when it became leader
	loaded bool
}

// offsetsAssigned says whether the offsets topic exists and is placed by the
// controller: then the coordinator follows its partitions' leadership.
func (gc *groupCoordinator) offsetsAssigned() bool {
	_, assigned, ok := gc.image.Partition(group.OffsetsTopic, 0)
	return ok && assigned
}

// offsetsClustered says whether groups are coordinated by the offsets partitions'
// leaders: the offsets topic is assigned, or it does not exist yet on a node with a
// metadata quorum (the controller will assign it).
func (gc *groupCoordinator) offsetsClustered() bool {
	return gc.offsetsAssigned() || (gc.ctlPort != nil && gc.image.Topic(group.OffsetsTopic) == nil)
}

// takeOffsetsRoles starts coordinating an assigned offsets topic of partitions
// partitions: every partition this node leads now starts loading. Later changes come
// as msgOffsetsRole. Idempotent.
func (gc *groupCoordinator) takeOffsetsRoles(partitions int32) {
	if gc.groups.coord == nil {
		return // before Start: startGroups comes back here
	}
	gc.groups.parts = partitions
	if gc.groups.owned == nil {
		gc.groups.owned = map[int32]*offsetsLoad{}
	}
	for p := int32(0); p < partitions; p++ {
		tp := core.TopicPartition{Topic: group.OffsetsTopic, Partition: p}
		s, _ := gc.assignedState(tp)
		if s.Leader == gc.cfg.NodeID && gc.logs.leads(tp) {
			gc.offsetsRoleChanged(msgOffsetsRole{tp: tp, leading: true,
				epoch: s.LeaderEpoch})
		}
	}
}

// offsetsRoleChanged follows the role of an offsets partition (msgOffsetsRole): a new
// leadership starts loading it, a lost one unloads it.
func (gc *groupCoordinator) offsetsRoleChanged(m msgOffsetsRole) {
	if gc.groups.coord == nil || gc.groups.parts == 0 || !gc.offsetsAssigned() ||
		m.tp.Partition >= gc.groups.parts {
		return // not coordinating yet: takeOffsetsRoles looks at every partition
	}
	l := gc.groups.owned[m.tp.Partition]
	switch {
	case m.leading && l == nil:
		pos, _ := gc.logs.position(m.tp)
		gc.groups.owned[m.tp.Partition] = &offsetsLoad{epoch: m.epoch, end: pos.end,
			since: gc.now}
		gc.lg.Info("leading an offsets partition; loading its groups",
			zap.Stringer("tp", m.tp), zap.Int32("leader_epoch", m.epoch),
			zap.Int64("load_to", pos.end), zap.Int64("hwm", pos.hwm))
		gc.tryLoadOffsets(m.tp)
	case m.leading:
		l.epoch = m.epoch // still the leader, same log: what it loaded stands
	case l != nil:
		gc.unloadOffsets(m.tp)
	}
}

// tryLoadOffsets replays a partition being loaded once its high-water mark reached the
// log end it had when this node became its leader (called again as the mark moves).
func (gc *groupCoordinator) tryLoadOffsets(tp core.TopicPartition) {
	l := gc.groups.owned[tp.Partition]
	if l == nil || l.loaded {
		return
	}
	pos, ok := gc.logs.position(tp)
	if !ok || pos.offline {
		return // COORDINATOR_NOT_AVAILABLE until it is back or moves
	}
	if pos.hwm < l.end && !mutantOn("offsets-load-before-hwm") {
		gc.hit(pOffsetsLoadWaits)
		return
	}
	n := gc.replayOffsets(tp)
	l.loaded = true
	gc.hit(pOffsetsLoadedLeader)
	gc.groups.coord.MarkRecovered()
	ids := gc.groupsOf(tp.Partition)
	for _, id := range ids {
		gc.groupChanged(id) // restored members' sessions need their timers
	}
	gc.lg.Info("offsets partition loaded; coordinating its groups", zap.Stringer("tp", tp),
		zap.Int("records", n), zap.Int("groups", len(ids)),
		zap.Int64("load_ms", (gc.now-l.since).Millis()))
	gc.purgeOrphanOffsets()
}

// unloadOffsets stops coordinating tp's groups: the writes waiting on tp fail
// (NOT_COORDINATOR), then the groups are forgotten with their offsets and timers, and
// their parked requests answered NOT_COORDINATOR.
func (gc *groupCoordinator) unloadOffsets(tp core.TopicPartition) {
	delete(gc.groups.owned, tp.Partition)
	gc.offsetWritesFailed(tp, kerr.NotLeaderForPartition.Code)
	ids := gc.groups.coord.Unload(func(id string) bool {
		return group.Partition(id, gc.groups.parts) == tp.Partition
	}, kerr.NotCoordinator.Code)
	for _, id := range ids {
		if t, ok := gc.groups.timers[id]; ok {
			gc.cancelTimer(t.id)
			delete(gc.groups.timers, id)
		}
	}
	gc.hit(pOffsetsUnloaded)
	gc.lg.Info("no longer leading an offsets partition; its groups unloaded",
		zap.Stringer("tp", tp), zap.Int("groups", len(ids)))
}

// groupsOf lists the known groups stored in offsets partition p, sorted.
func (gc *groupCoordinator) groupsOf(p int32) []string {
	var out []string
	for _, id := range gc.groups.coord.GroupIDs() {
		if group.Partition(id, gc.groups.parts) == p {
			out = append(out, id)
		}
	}
	return out
}

// ownerCode says whether this node coordinates the groups of offsets partition tp of
// an assigned offsets topic with state s: 0 when it leads tp and loaded it.
func (gc *groupCoordinator) ownerCode(tp core.TopicPartition, s meta.PartitionState) int16 {
	switch {
	case s.Leader == meta.NoLeader:
		gc.hit(pCoordinatorUnavailable)
		return kerr.CoordinatorNotAvailable.Code
	case s.Leader != gc.cfg.NodeID:
		gc.hit(pNotCoordinator)
		return kerr.NotCoordinator.Code
	}
	l := gc.groups.owned[tp.Partition]
	switch {
	case l == nil:
		// Led here by the image, but the replica does not lead (yet): its log is still
		// opening, or it cannot lead in this epoch.
		return kerr.CoordinatorNotAvailable.Code
	case !l.loaded:
		gc.hit(pCoordinatorLoading)
		return kerr.CoordinatorLoadInProgress.Code
	}
	return 0
}

// loading says whether an offsets partition this node leads is still loading.
func (gc *groupCoordinator) loading() bool {
	for _, l := range gc.groups.owned {
		if !l.loaded {
			return true
		}
	}
	return false
}

// coordinatorOf is the node that coordinates groupID by the image, for FindCoordinator:
// the leader of its offsets partition; code is COORDINATOR_NOT_AVAILABLE when there is
// none (or the offsets topic is not there yet).
func (gc *groupCoordinator) coordinatorOf(groupID string) (node int32, code int16) {
	if gc.groups.parts == 0 {
		return -1, kerr.CoordinatorNotAvailable.Code
	}
	tp := gc.offsetsPartition(groupID)
	s, assigned := gc.assignedState(tp)
	switch {
	case !assigned:
		return gc.cfg.NodeID, gc.coordinatorCode(groupID)
	case s.Leader == meta.NoLeader:
		return -1, kerr.CoordinatorNotAvailable.Code
	case s.Leader != gc.cfg.NodeID:
		return s.Leader, 0
	}
	code = gc.coordinatorCode(groupID)
	if code == kerr.CoordinatorLoadInProgress.Code {
		code = 0 // Kafka names a loading coordinator; its group requests say it loads
	}
	return gc.cfg.NodeID, code
}

// CoordinatorEpoch says in which leader epoch of its offsets partition this node
// coordinates groupID (loading or loaded): ok is false unless the offsets topic is
// assigned and this node's replica leads that partition. It only reads, for the
// simulator, which tells coordinator terms apart by it (a node leads a partition in an
// epoch at most once).
func (gc *groupCoordinator) CoordinatorEpoch(groupID string) (epoch int32, ok bool) {
	if gc.groups.coord == nil || gc.groups.parts == 0 || !gc.offsetsAssigned() {
		return 0, false
	}
	l := gc.groups.owned[gc.offsetsPartition(groupID).Partition]
	if l == nil {
		return 0, false
	}
	return l.epoch, true
}
