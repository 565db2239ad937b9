package broker

// Resignation: a leader whose log went offline hands its leadership to the ISR.
//
// A partition log goes offline after a write or fsync it cannot recover from (ENOSPC,
// EIO: replica.ErrLogOffline) and stays so until the node restarts. Its leader can then
// append nothing, make nothing durable and serve no fetch, so its followers stop
// advancing. Left alone it would shrink the ISR to itself (its followers "fell
// behind"), and the partition would stay on a broken disk, or worse on one wiped
// later, with no member left that the controller may elect.
//
// Kafka's broker halts when its only log directory fails, or reports the directory
// offline in its heartbeat (KIP-858) so the controller moves leadership off every
// replica in it. Sluice takes single partitions offline, so the leader says it per
// partition: an AlterPartition whose new ISR is the old one without the leader, which
// Sluice's controller reads as a resignation (controller.DecideAlterPartition): it
// elects the first member of that ISR in replica order it may elect, in a new leader
// epoch, and commits it like any partition change. Until that record is applied the
// offline leader proposes no other ISR change, neither shrink nor expansion (B15). A
// leader alone in its ISR does not resign: no one else holds every acknowledged record,
// and the partition waits for this node's restart (docs/replication.md, "A leader
// whose log goes offline").

import (
	"slices"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/probe"
)

var (
	pLeaderResigns    = probe.Register("broker/offline-leader-resigns")
	pLeaderAloneStays = probe.Register("broker/offline-leader-alone-in-isr")
)

// offlineLeader says whether this node leads tp, assigned, on a log that went offline.
// Under the mutant offline-leader-keeps-leading it never does: the leader shrinks its
// ISR and keeps leading as before.
func (rm *replicaManager) offlineLeader(tp core.TopicPartition) bool {
	rep := rm.replicas[tp]
	s, assigned := rm.assignedState(tp)
	return rep != nil && assigned && s.Leader == rm.cfg.NodeID && rep.Offline() &&
		!mutantOn("offline-leader-keeps-leading")
}

// maybeResign asks the controller to move tp's leadership to the rest of its ISR when
// this node leads it on an offline log; it reports whether it does lead so (and then
// the caller must propose no other ISR change).
func (rm *replicaManager) maybeResign(tp core.TopicPartition) bool {
	if !rm.offlineLeader(tp) {
		return false
	}
	s, _ := rm.assignedState(tp)
	if a := rm.isr.alters[tp]; a != nil {
		if a.resign {
			return true // asked already: the retry timer or the record goes on
		}
		rm.dropAlter(tp) // a change decided before the failure gives way
	}
	rest := others(s.ISR, rm.cfg.NodeID)
	if len(rest) == 0 {
		rm.hit(pLeaderAloneStays)
		return true
	}
	rm.hit(pLeaderResigns)
	rm.lg.Warn("partition log offline: asking the controller to move leadership to "+
		"the rest of the ISR", zap.Stringer("tp", tp), zap.Int32s("isr", s.ISR),
		zap.Int32("leader_epoch", s.LeaderEpoch))
	rm.proposeISR(tp, s, rest, false)
	rm.isr.alters[tp].resign = true
	return true
}

// checkOfflineLeader asserts B15 before an ISR change of tp is proposed: when this node
// leads tp on an offline log, the change is its resignation (it leaves itself out).
func (rm *replicaManager) checkOfflineLeader(tp core.TopicPartition, next []int32) {
	rep := rm.replicas[tp]
	s, assigned := rm.assignedState(tp)
	offlineLeader := rep != nil && assigned && s.Leader == rm.cfg.NodeID && rep.Offline()
	core.Invariant(!offlineLeader || !slices.Contains(next, rm.cfg.NodeID), "B15",
		"%s: the leader's log is offline, yet it asks for ISR %v with itself in it", tp, next)
}
