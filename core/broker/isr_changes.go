package broker

// ISR changes, the leader's side (Kafka's Partition.maybeShrinkIsr / maybeExpandIsr and
// AlterPartitionManager, KRaft semantics).
//
// Every replica.lag.time.max.ms/2 the leader looks for ISR members that have not caught
// up for replica.lag.time.max.ms (replica.OutOfSyncReplicas) and asks the controller to
// drop them; after each follower fetch it asks to add a follower outside the ISR that
// caught up (replica.CaughtUpReplicas). The request is Kafka's AlterPartition, sent with
// Env.SendPeer to the metadata quorum's leader, whose controller decides it
// (core/controller DecideAlterPartition) and commits a PartitionChange. At most one
// change per partition is in flight. The leader takes the new ISR only from the
// committed record (applyRole), never from the answer; while an expansion is pending the
// high-water mark counts the follower being added too (the "maximal ISR", the union of
// the committed and the proposed ISR), so that nothing is acknowledged that the new ISR
// might not hold. A shrink takes effect for the high-water mark only once committed.
//
// Answers: NOT_CONTROLLER, REQUEST_TIMED_OUT and transport errors are retried with a
// backoff (alterBackoffMs doubling up to alterBackoffMaxMs) to the quorum leader known
// then; a success waits for its record (a record with a newer partition epoch ends
// every pending change); INELIGIBLE_REPLICA and OPERATION_NOT_ATTEMPTED, which say
// nothing was applied, drop the change (an expansion at once) and the next check or
// fetch decides again after the backoff; any other error (a stale partition or leader
// epoch) keeps the change, maximal ISR included, until its record or a newer one is
// applied, as Kafka's Partition.handleAlterPartitionError does: an earlier attempt
// whose answer was lost may be what made the state stale.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
)

const (
	// alterTimeoutMs bounds one AlterPartition request (E7's TimeoutMs).
	alterTimeoutMs = 5_000
	// alterBackoffMs is the first wait before an AlterPartition is retried; it doubles
	// up to alterBackoffMaxMs.
	alterBackoffMs    = 100
	alterBackoffMaxMs = 5_000
	// alterRecordWaitMs is how long a change answered successfully waits for its record
	// before it is forgotten (the record normally comes within the same milliseconds).
	alterRecordWaitMs = 30_000
)

// isrState is the replica manager's ISR changes in flight and its periodic check.
type isrState struct {
	alters map[core.TopicPartition]*alterISR
	byPeer map[uint64]core.TopicPartition // the AlterPartition requests in flight
	check  uint64                         // the ISR check's timer, 0 when not armed
}

// alterPhase is where one ISR change stands.
type alterPhase uint8

const (
	alterSending  alterPhase = iota + 1 // a request is in flight (peer)
	alterBackoff                        // waiting to send again (retry timer)
	alterAnswered                       // accepted; waiting for the committed record
	alterFailed                         // refused; forgotten when the timer fires
)

func (p alterPhase) String() string {
	switch p {
	case alterSending:
		return "sending"
	case alterBackoff:
		return "backoff"
	case alterAnswered:
		return "answered"
	case alterFailed:
		return "failed"
	default:
		return "phase(?)"
	}
}

// alterISR is one ISR change this node, as a partition's leader, asked for.
type alterISR struct {
	tp             core.TopicPartition
	topicID        [16]byte
	leaderEpoch    int32
	partitionEpoch int32   // the state it was decided from
	newISR         []int32 // the ISR asked for, leader included, sorted
	expand         bool
	resign         bool // the leader leaves: its log is offline (resign.go)
	phase          alterPhase
	peer           uint64 // the request in flight (alterSending)
	timer          uint64 // retry or forget (alterBackoff, alterAnswered, alterFailed)
	attempts       int
	since          core.Time
}

// maximalISR is the ISR the high-water mark counts for tp, this node left out: the
// committed ISR and, while an expansion is pending, the follower being added.
func (rm *replicaManager) maximalISR(tp core.TopicPartition, s meta.PartitionState) []int32 {
	isr := others(s.ISR, rm.cfg.NodeID)
	if a := rm.isr.alters[tp]; a != nil && a.expand && !mutantOn("hwm-ignores-pending-isr") {
		for _, id := range others(a.newISR, rm.cfg.NodeID) {
			if !slices.Contains(isr, id) {
				isr = append(isr, id)
			}
		}
	}
	return isr
}

// armISRCheck arms the periodic ISR check, once, while this node leads an assigned
// partition (a node with only unassigned partitions never arms it).
func (rm *replicaManager) armISRCheck() {
	if rm.isr.check != 0 {
		return
	}
	every := max(rm.cfg.ReplicaLagTimeMaxMs/2, 1)
	rm.isr.check = rm.setTimer(rm.now.AddMillis(every), brokerTimer{kind: timerISRCheck})
}

// isrCheck shrinks the ISR of every partition led here whose members fell behind.
func (rm *replicaManager) isrCheck() {
	rm.isr.check = 0
	leads := false
	for _, tp := range rm.sortedPartitions() {
		s, assigned := rm.assignedState(tp)
		if !assigned || s.Leader != rm.cfg.NodeID || rm.replicas[tp].Follower() {
			continue
		}
		leads = true
		if rm.maybeResign(tp) || rm.isr.alters[tp] != nil {
			continue
		}
		out := rm.replicas[tp].OutOfSyncReplicas(rm.now.Millis(), rm.cfg.ReplicaLagTimeMaxMs)
		var drop []int32
		for _, id := range out {
			if slices.Contains(s.ISR, id) {
				drop = append(drop, id)
			}
		}
		if len(drop) == 0 {
			continue
		}
		rm.hit(pISRShrink)
		rm.lg.Info("shrinking ISR: followers fell behind", zap.Stringer("tp", tp),
			zap.Int32s("isr", s.ISR), zap.Int32s("out_of_sync", drop),
			zap.Int64("replica.lag.time.max.ms", rm.cfg.ReplicaLagTimeMaxMs))
		next := slices.DeleteFunc(slices.Clone(s.ISR), func(id int32) bool {
			return slices.Contains(drop, id)
		})
		rm.proposeISR(tp, s, next, false)
	}
	if leads {
		rm.armISRCheck()
	}
}

// maybeExpand asks to add follower id to tp's ISR once it caught up (after its fetch).
func (rm *replicaManager) maybeExpand(tp core.TopicPartition, rep *replica.Replica,
	s meta.PartitionState, id int32) {
	if slices.Contains(s.ISR, id) || rm.isr.alters[tp] != nil || !rm.eligible(id) ||
		rm.offlineLeader(tp) || len(rep.CaughtUpReplicas([]int32{id})) == 0 {
		return
	}
	rm.hit(pISRExpand)
	rm.lg.Info("expanding ISR: follower caught up", zap.Stringer("tp", tp),
		zap.Int32s("isr", s.ISR), zap.Int32("follower", id))
	rm.proposeISR(tp, s, append(slices.Clone(s.ISR), id), true)
	rep.SetISR(rm.maximalISR(tp, s)) // never lowers the high-water mark
}

// eligible says whether node id may join an ISR: registered and unfenced, not shutting
// down (the controller refuses others, INELIGIBLE_REPLICA). Without registrations in the
// image (no controller) every node is.
func (n *node) eligible(id int32) bool {
	if len(n.image.Brokers()) == 0 {
		return true
	}
	b, ok := n.image.Broker(id)
	return ok && b.State == meta.BrokerUnfenced
}

// proposeISR starts one ISR change of tp from state s.
func (rm *replicaManager) proposeISR(tp core.TopicPartition, s meta.PartitionState,
	next []int32, expand bool) {
	rm.checkOfflineLeader(tp, next)
	slices.Sort(next)
	a := &alterISR{tp: tp, topicID: rm.image.Topic(tp.Topic).ID, leaderEpoch: s.LeaderEpoch,
		partitionEpoch: s.PartitionEpoch, newISR: next, expand: expand, since: rm.now}
	if rm.isr.alters == nil {
		rm.isr.alters = map[core.TopicPartition]*alterISR{}
		rm.isr.byPeer = map[uint64]core.TopicPartition{}
	}
	rm.isr.alters[tp] = a
	rm.sendAlter(a)
}

// sendAlter sends a's AlterPartition to the metadata quorum's leader, or backs off
// while none is known.
func (rm *replicaManager) sendAlter(a *alterISR) {
	a.attempts++
	if rm.leader < 0 {
		rm.backoffAlter(a, alterBackoff)
		return
	}
	epoch := int64(-1)
	if b, ok := rm.image.Broker(rm.cfg.NodeID); ok {
		epoch = b.Epoch
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = rm.cfg.NodeID, epoch
	t := kmsg.NewAlterPartitionRequestTopic()
	t.Topic, t.TopicID = a.tp.Topic, a.topicID
	p := kmsg.NewAlterPartitionRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.PartitionEpoch = a.tp.Partition, a.leaderEpoch,
		a.partitionEpoch
	p.NewISR = slices.Clone(a.newISR)
	for _, id := range a.newISR {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID = id
		if b, ok := rm.image.Broker(id); ok {
			e.BrokerEpoch = b.Epoch
		}
		p.NewEpochISR = append(p.NewEpochISR, e)
	}
	t.Partitions = []kmsg.AlterPartitionRequestTopicPartition{p}
	req.Topics = []kmsg.AlterPartitionRequestTopic{t}
	a.phase, a.peer = alterSending, rm.token()
	rm.isr.byPeer[a.peer] = a.tp
	rm.env.SendPeer(PeerRequest{Node: rm.leader, ID: a.peer, Msg: req,
		TimeoutMs: alterTimeoutMs})
}

// backoffAlter arms a's timer for its next step: a retry (alterBackoff), forgetting a
// refused change (alterFailed) or one whose record did not come (alterAnswered).
func (rm *replicaManager) backoffAlter(a *alterISR, phase alterPhase) {
	wait := int64(alterRecordWaitMs)
	if phase != alterAnswered {
		wait = min(int64(alterBackoffMs)<<min(a.attempts-1, 10), alterBackoffMaxMs)
	}
	a.phase = phase
	a.timer = rm.setTimer(rm.now.AddMillis(wait), brokerTimer{kind: timerAlterISR, tp: a.tp})
}

// alterTimerFired retries a backed-off change, or forgets one that failed or whose
// record did not come.
func (rm *replicaManager) alterTimerFired(tp core.TopicPartition, id uint64) {
	a := rm.isr.alters[tp]
	if a == nil || a.timer != id {
		return
	}
	a.timer = 0
	if a.phase == alterBackoff {
		rm.hit(pISRRetry)
		rm.sendAlter(a)
		return
	}
	rm.dropAlter(tp)
	if rep := rm.replicas[tp]; rep != nil {
		rm.applyRole(tp) // the ISR as committed (an expansion that failed leaves it)
	}
}

// alterAnswered takes the controller's answer to an AlterPartition; false when id is
// not one.
func (rm *replicaManager) alterAnswered(in PeerReply) bool {
	tp, ok := rm.isr.byPeer[in.ID]
	if !ok {
		return false
	}
	delete(rm.isr.byPeer, in.ID)
	a := rm.isr.alters[tp]
	if a == nil || a.peer != in.ID {
		return true // dropped meanwhile (a newer state, another role)
	}
	a.peer = 0
	code, pe := alterAnswer(in, tp)
	switch code {
	case 0:
		if s, ok := rm.assignedState(tp); !ok || s.PartitionEpoch >= pe {
			rm.dropAlter(tp) // its record is applied already (or nothing changed)
			return true
		}
		rm.backoffAlter(a, alterAnswered)
	case kerr.NotController.Code, kerr.RequestTimedOut.Code, kerr.UnknownServerError.Code:
		rm.lg.Info("ISR change not taken; retrying", zap.Stringer("tp", tp),
			zap.Int16("code", code), zap.Error(in.Err))
		rm.backoffAlter(a, alterBackoff)
	case kerr.IneligibleReplica.Code, kerr.OperationNotAttempted.Code:
		rm.lg.Warn("ISR change refused", zap.Stringer("tp", tp), zap.Int32s("isr", a.newISR),
			zap.NamedError("error", kerr.ErrorForCode(code)))
		rm.backoffAlter(a, alterFailed)
		if rep := rm.replicas[tp]; rep != nil {
			if s, ok := rm.assignedState(tp); ok && s.Leader == rm.cfg.NodeID {
				rep.SetISR(others(s.ISR, rm.cfg.NodeID)) // the refused expansion goes
			}
		}
	default:
		// A stale partition or leader epoch, or anything else: the state this node
		// proposed against is out of date, and an earlier attempt whose answer was lost
		// may be what moved it, so the change may be committed already. As Kafka does,
		// the maximal ISR stays until the record that moved the epoch is applied
		// (seed 853 of the ACL world: reset at once, the high-water mark passed the
		// follower the committed ISR held).
		rm.lg.Info("ISR change answered with a stale state; waiting for the record",
			zap.Stringer("tp", tp), zap.Int32s("isr", a.newISR),
			zap.NamedError("error", kerr.ErrorForCode(code)))
		if mutantOn("isr-stale-answer-resets") {
			rm.backoffAlter(a, alterFailed)
			if rep := rm.replicas[tp]; rep != nil {
				if s, ok := rm.assignedState(tp); ok && s.Leader == rm.cfg.NodeID {
					rep.SetISR(others(s.ISR, rm.cfg.NodeID))
				}
			}
			return true
		}
		rm.backoffAlter(a, alterAnswered)
	}
	return true
}

// alterAnswer reads tp's error code and partition epoch from an AlterPartition answer;
// a transport error or a malformed answer reads as UNKNOWN_SERVER_ERROR (retried).
func alterAnswer(in PeerReply, tp core.TopicPartition) (code int16, partitionEpoch int32) {
	resp, ok := in.Msg.(*kmsg.AlterPartitionResponse)
	if in.Err != nil || !ok {
		return kerr.UnknownServerError.Code, 0
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode, 0
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Partition == tp.Partition {
				return p.ErrorCode, p.PartitionEpoch
			}
		}
	}
	return kerr.UnknownServerError.Code, 0
}

// dropAlter forgets tp's ISR change: committed, superseded or abandoned. An answer
// still to come is ignored.
func (rm *replicaManager) dropAlter(tp core.TopicPartition) {
	a := rm.isr.alters[tp]
	if a == nil {
		return
	}
	delete(rm.isr.alters, tp)
	if a.peer != 0 {
		delete(rm.isr.byPeer, a.peer)
	}
	if a.timer != 0 {
		rm.cancelTimer(a.timer)
	}
}

// supersedeAlter drops tp's ISR change once the image holds a newer partition state
// than the one it was decided from: its own record, or another change that makes it
// stale.
func (rm *replicaManager) supersedeAlter(tp core.TopicPartition, s meta.PartitionState) {
	if a := rm.isr.alters[tp]; a != nil && s.PartitionEpoch > a.partitionEpoch {
		rm.dropAlter(tp)
	}
}
