package broker

// The group coordinator: the part of the node that serves consumer groups.
//
// It owns the group.Coordinator, the group timers, the offset writes in flight
// (offset_writes.go), the writes waiting for the offsets topic, expiry
// (groups_expire.go) and the parked JoinGroup and SyncGroup
// requests, and serves FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups and DeleteGroups.
// It writes __consumer_offsets through the replica manager (msgAppendInternal; answers
// msgAppended, and msgDurable / msgPartitionFailed as the partitions move), asks the controller side for
// the offsets topic (msgEnsureOffsetsTopic, msgPurgeOrphans) and tombstones deleted
// topics' offsets for it (msgTombstoneOffsets, msgTombstoneCount). It still reads the
// offsets partitions' positions and records synchronously (logReader).

// groupCoordinator serves the node's consumer groups.
type groupCoordinator struct {
	*node
	logs   logReader // the replica manager, read only
	groups groupsState
	timers timerTable // group deadlines, offset expiry
}

func newGroupCoordinator(n *node, logs logReader) *groupCoordinator {
	return &groupCoordinator{node: n, logs: logs, timers: timerTable{}}
}
