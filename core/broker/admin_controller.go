package broker

// The controller side of the node: the admin queue.
//
// It owns the admin operations (admin_queue.go), the proposals awaiting their answer
// (metaWaiters), the producer-id blocks and the requests waiting for one
// (init_producer_id.go), and the topic creation rates (limits.go). It serves
// CreateTopics, CreatePartitions, DeleteTopics, AlterConfigs,
// IncrementalAlterConfigs, InitProducerId and the auto-creation of a Metadata request,
// creates the offsets topic for the group coordinator (offsets_topic.go) and has it
// tombstone a deleted topic's offsets. It waits for new partitions' logs through the
// replica manager (msgAwaitOpens, msgLogsOpened), and has the front answer an
// auto-creating Metadata request (msgAnswerMetadata). It still reads the replica
// manager's partition count and open errors synchronously (hostView). Today it runs on
// every node, as the single node is its own quorum; it becomes issue 8's controller
// (active on the quorum leader, admin requests forwarded to it) in the next steps.

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/meta"
)

// hostView is the read-only view of the replica manager the controller side still
// reads synchronously: the node's partition budget (sluice.max.partitions) and the
// partitions of a new topic whose logs did not open.
type hostView interface {
	partitionBudget(n, planned int64) (int16, string)
	unopened(topic string, from, to int32) (int16, string)
}

// adminController runs the node's metadata-changing operations.
type adminController struct {
	*node
	hosts hostView // the replica manager, read only

	admin       adminState            // metadata-changing requests, one at a time
	metaWaiters map[uint64]metaWaiter // proposals awaiting their answer, by token

	// Producer ids handed out from the current committed block: [nextPID, pidBlockEnd).
	nextPID, pidBlockEnd int64
	pidWaiters           []pidWaiter // requests waiting for pidBlockInFlight
	pidBlockInFlight     bool

	creation creationState // topic creation rates (limits.go)

	// With a quorum (controller_port.go): requests to the controller awaiting their
	// answer, by id, and CreateTopics forwarded to the controller's node, by peer
	// request id, with the topic names they carry.
	ctlWaiters map[uint64]metaWaiter
	forwards   map[uint64]forward
	forwarding map[string]bool
	// reassigns are the AlterPartitionReassignments waiting for the controller, by id
	// (alter_partition_reassignments.go).
	reassigns map[uint64]reassignAsk
	// elections are the ElectLeaders waiting for the controller, by id (elect_leaders.go)
	elections map[uint64]electAsk
	// unregisters are the UnregisterBroker requests waiting likewise
	// (unregister_broker.go).
	unregisters map[uint64]unregisterAsk
	// adminForwards are the clients' admin changes forwarded to the controller's node,
	// by Envelope peer request id (admin_forward.go).
	adminForwards map[uint64]*opForward
}

func newAdminController(n *node, hosts hostView) *adminController {
	return &adminController{node: n, hosts: hosts, metaWaiters: map[uint64]metaWaiter{},
		ctlWaiters: map[uint64]metaWaiter{}, forwards: map[uint64]forward{},
		forwarding: map[string]bool{}}
}

// propose sends rec to the metadata log; metaAnswer hands w its answer: nil when it
// committed (the record was applied before, M4), an error otherwise. Every error is
// retriable for the client: a rejected or not-leader record never commits; an unknown
// one may commit later and is then applied like any other record (M3).
func (ctl *adminController) propose(rec meta.Record, w metaWaiter) {
	w.kind, w.topic = rec.Kind, rec.Topic
	if ctl.ctlPort != nil {
		if msg, ok := ctl.controllerMessage(rec, w); ok {
			ctl.askController(msg, w) // the controller places and proposes
			return
		}
	}
	tok := ctl.token()
	w.since = ctl.now
	ctl.metaWaiters[tok] = w
	ctl.env.ProposeMeta(rec, tok)
}

// proposalAnswered continues what waited for a proposal's answer (token in.Token); err
// is nil when it committed and applied (metaport.go).
func (ctl *adminController) proposalAnswered(in MetaAnswer, err error) {
	w, ok := ctl.metaWaiters[in.Token]
	if !ok {
		ctl.lg.Warn("metadata answer for no proposal", zap.Uint64("token", in.Token),
			zap.Stringer("outcome", in.Outcome))
		return
	}
	delete(ctl.metaWaiters, in.Token)
	if w.op == nil {
		ctl.pidBlockAnswered(err)
		return
	}
	ctl.adminAnswered(w.op, w.i, err)
}

// autoCreate proposes the topics a Metadata request names and may create.
func (ctl *adminController) autoCreate(op *opAutoCreate) {
	// Re-check: an operation queued before this one may have created or invalidated
	// some of the topics.
	m := op.m
	failed := map[string]topicError{}
	pending := newPendingTopics()
	var recs []meta.Record
	if ctl.notController() { // leadership moved while the operation was queued
		op.failed = ctl.autoCreateElsewhere(op.req, m)
		ctl.proposeAll(op, nil)
		return
	}
	deferred := 0
	for _, name := range ctl.autoCreatable(op.req, m) {
		if !ctl.autoCreateAdmits(len(recs)) {
			failed[name] = topicError{code: kerr.LeaderNotAvailable.Code}
			ctl.hit(pAutoCreateDeferred)
			deferred++
			continue
		}
		spec := topicSpec{name: name, partitions: -1, replicationFactor: -1}
		rec, code, msg := ctl.planTopic(spec, pending)
		if code != 0 {
			failed[name] = topicError{code, msg}
			continue
		}
		ctl.hit(pAutoCreate)
		ctl.creation.auto.spend(rec.Partitions)
		rec.TopicID = ctl.newTopicID()
		recs = append(recs, rec)
	}
	if deferred > 0 {
		ctl.autoCreateDeferred(deferred)
	}
	op.failed = failed
	ctl.proposeAll(op, recs) // then autoCreateCommitted
}

// autoCreateCommitted notes the topics whose creation did not commit, then waits for
// the new logs before answering (adminOpened).
func (ctl *adminController) autoCreateCommitted(op *opAutoCreate) {
	for i, err := range op.errs {
		if err != nil {
			code, msg := commitFailure(err)
			if code == kerr.NotController.Code { // the controller moved: clients retry
				code = kerr.LeaderNotAvailable.Code
			}
			op.failed[op.recs[i].Topic] = topicError{code, msg}
		}
	}
	ctl.afterOpens(op)
}
