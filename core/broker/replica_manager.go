package broker

// The replica manager: the part of the node that hosts partitions.
//
// It owns the replicas, the queue of logs still to open (open_queue.go), why a log did
// not open, the partition count, the fsync in flight per partition, the parked acks=all
// produces and long-polling fetches, and the retention pass. It serves Produce, Fetch,
// ListOffsets, DeleteRecords, OffsetForLeaderEpoch, DescribeLogDirs and
// DescribeProducers. What other parts must learn from
// it leaves as messages (messages.go): a partition's high-water mark moved
// (msgDurable), a partition failed (msgPartitionFailed), the logs an admin operation
// waited for are open (msgLogsOpened). docs/actors.md has the plan it is a step of.

import (
	"sort"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/replica"
)

// replicaManager hosts the node's partitions.
type replicaManager struct {
	*node

	replicas    map[core.TopicPartition]*replica.Replica
	incarnation uint64 // last incarnation number handed to a replica
	// partitionTotal counts the image's partitions (sluice.max.partitions);
	// openErrs holds why a committed partition's log did not open (partition_limit.go).
	partitionTotal int64
	openErrs       map[core.TopicPartition]error

	syncs    map[core.TopicPartition]pendingSync // the sync in flight per partition
	deletes  []*pendingDelete                    // DeleteRecords waiting for the ISR
	produces produceState
	fetches  fetchState
	sessions sessionCache // incremental fetch sessions (fetch_session.go)
	opens    openState    // new partitions whose logs are still to open (open_queue.go)
	timers   timerTable   // produce timeouts, fetch waits, open chunks, retention, ISR

	fetcher fetcherState // the partitions this node follows (fetcher.go)
	// roles holds the role applied to each hosted assigned partition (placement.go);
	// isr the ISR changes in flight and the ISR check's timer (isr_changes.go).
	roles   map[core.TopicPartition]partitionRole
	isr     isrState
	held    map[core.TopicPartition]map[int32]int64 // followers' reported ends (B13)
	cleaner cleanerState                            // compaction scheduling (cleaner.go)
	quotas  quotaState                              // client quota meters (quotas.go)
}

func newReplicaManager(n *node) *replicaManager {
	return &replicaManager{node: n,
		replicas: map[core.TopicPartition]*replica.Replica{},
		openErrs: map[core.TopicPartition]error{},
		timers:   timerTable{},
	}
}

// openReplica opens tp's log with its topic's current settings.
func (rm *replicaManager) openReplica(tp core.TopicPartition) {
	cfg := rm.replicaConfig(rm.image.Topic(tp.Topic))
	log, err := rm.env.OpenLog(tp, cfg.Segment)
	rm.noteOpen(tp, err)
	if err != nil {
		// The partition stays unhosted: clients get KAFKA_STORAGE_ERROR for it (via
		// replicaFor) and the node keeps serving everything else.
		rm.lg.Error("cannot open partition log", zap.Stringer("tp", tp), zap.Error(err))
		rm.hit(pOpenLogFailed)
		return
	}
	rm.incarnation++
	r, err := replica.New(tp, rm.incarnation, log, cfg, rm.lg)
	if err != nil {
		rm.lg.Error("cannot recover partition", zap.Stringer("tp", tp), zap.Error(err))
		rm.noteOpen(tp, err)
		rm.hit(pRecoverFailed)
		_ = log.Close()
		return
	}
	rm.replicas[tp] = r
	if rm.opens.live {
		rm.applyRole(tp) // at Start, once the replay is done (Broker.start)
	}
	rm.fetcherLogOpened(tp)
	rm.armCleaner()
}

// removeReplica closes a deleted partition and removes its log, also when the log did
// not open (a read error at recovery): left behind, it would be recovered into the
// next topic of the same name.
func (rm *replicaManager) removeReplica(tp core.TopicPartition) {
	rm.unfollow(tp)
	rm.noteOpen(tp, nil)
	rm.forgetOpen(tp)
	rm.dropAlter(tp)
	delete(rm.held, tp)
	if _, ok := rm.roles[tp]; ok {
		delete(rm.roles, tp)
		rm.unfollow(tp)
	}
	if r := rm.replicas[tp]; r != nil {
		delete(rm.replicas, tp)
		rm.partitionGone(tp)
		r.Close()
	}
	if tp.Topic == group.OffsetsTopic {
		rm.post(msgOffsetsRole{tp: tp}) // its groups, if led here, are unloaded
	}
	if err := rm.env.RemoveLog(tp); err != nil {
		rm.lg.Warn("cannot remove partition log", zap.Stringer("tp", tp), zap.Error(err))
	}
}

// sortedPartitions returns the hosted partitions in a fixed order.
func (rm *replicaManager) sortedPartitions() []core.TopicPartition {
	tps := make([]core.TopicPartition, 0, len(rm.replicas))
	for tp := range rm.replicas {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
	return tps
}

// logPosition is what the group coordinator reads of an offsets partition's log.
type logPosition struct {
	start, hwm, end int64
	offline         bool
	incarnation     uint64
}

// logReader is the read-only view of the replica manager that the group coordinator
// still reads synchronously: where an offsets partition's log stands (compaction,
// coordinatorCode) and its records (the replay at load). The next step of the split
// replaces it by what msgDurable carries and by reads answered as messages.
type logReader interface {
	position(tp core.TopicPartition) (logPosition, bool)
	leads(tp core.TopicPartition) bool
	readLog(tp core.TopicPartition, offset int64, maxBytes int) replica.ReadResult
}

// position says where tp's log stands; false when tp is not hosted.
func (rm *replicaManager) position(tp core.TopicPartition) (logPosition, bool) {
	rep := rm.replicas[tp]
	if rep == nil {
		return logPosition{}, false
	}
	return logPosition{start: rep.StartOffset(), hwm: rep.HighWatermark(),
		end: rep.EndOffset(), offline: rep.Offline(), incarnation: rep.Incarnation()}, true
}

// leads says whether tp's hosted replica leads (it is not a follower).
func (rm *replicaManager) leads(tp core.TopicPartition) bool {
	rep := rm.replicas[tp]
	return rep != nil && !rep.Follower()
}

// readLog reads tp's log below its high-water mark.
func (rm *replicaManager) readLog(tp core.TopicPartition, offset int64,
	maxBytes int) replica.ReadResult {
	return rm.replicas[tp].Read(offset, maxBytes)
}
