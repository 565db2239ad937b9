package broker

// The broker's way to the cluster's controller (docs/controller.md, "Creating topics").
//
// A node with a metadata quorum hosts a controller (core/controller), active on the
// quorum's leader, and gives its broker a ControllerPort (WithController). The admin
// part then no longer proposes topic creations, partition additions and producer-id
// blocks itself: it validates each request as before and asks the active controller,
// which places the new partitions (replicas, ISR, leader, epochs) or checks a manual
// assignment, and proposes the record. Kafka clients send CreateTopics,
// CreatePartitions and DeleteTopics to the controller Metadata names; another node
// answers NOT_CONTROLLER and the client retries there. What a node that is not the
// controller must create itself (a Metadata request's auto-creation, __consumer_offsets)
// it forwards as a CreateTopics request to the controller's node (Env.SendPeer), which
// validates and creates it like a client's; producer-id blocks come from the
// controller's AllocateProducerIds wherever the node is. A node without a quorum has no
// port and proposes its own records, as it always did.

import (
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

// ControllerPort carries the broker's requests to the cluster's controller.
type ControllerPort interface {
	// AskController sends msg to the controller of node to: this node's own (delivered
	// after the current step) or a peer's, over the wire. Exactly one
	// ControllerAnswer{ID: id} follows unless the incarnation ends first (as E7): the
	// controller's response, or Err when there is no controller to ask (to is -1), or
	// the request could not be sent or was not answered within timeoutMs (its outcome
	// is then unknown).
	AskController(to int32, id uint64, msg controller.Message, timeoutMs int64)
}

// WithController makes the broker the broker of a node with a metadata quorum: topic
// creation, partition addition and producer-id blocks go through the controller p
// reaches.
func WithController(p ControllerPort) Option { return func(b *Broker) { b.ctlPort = p } }

// WithQuorumSize tells the broker of a quorum node how many nodes the metadata quorum
// has (--voters), each of them also a broker: the offsets topic's replication factor is
// capped to the brokers the cluster registered, but never below this number, since at a
// cluster's first start the brokers register one by one (offsets_topic.go).
func WithQuorumSize(n int) Option { return func(b *Broker) { b.quorumSize = n } }

// ControllerAnswer answers one ControllerPort.AskController.
type ControllerAnswer struct {
	ID   uint64
	Resp controller.Response
	Err  error
}

func (ControllerAnswer) isInput() {}

// controllerAskTimeoutMs bounds a request to a peer's controller and a forwarded
// CreateTopics (Kafka's default request.timeout.ms).
const controllerAskTimeoutMs = 30_000

// controllerError is the controller's refusal of a creation, handed to the waiting
// operation as its record's commit error (commitFailure answers its code).
type controllerError struct {
	code int16
	msg  string
}

func (e *controllerError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	if err := kerr.ErrorForCode(e.code); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("controller error %d", e.code)
}

// controllerRefusal returns the code and message of a controller's refusal in err.
func controllerRefusal(err error) (int16, string, bool) {
	var ce *controllerError
	if errors.As(err, &ce) {
		return ce.code, ce.Error(), true
	}
	return 0, "", false
}

// notController says the node has a quorum and does not lead it: requests for the
// controller (CreateTopics, CreatePartitions, DeleteTopics) are answered NOT_CONTROLLER.
func (n *node) notController() bool { return n.ctlPort != nil && n.leader != n.cfg.NodeID }

// askController sends msg to the active controller; controllerAnswered continues w.
func (ctl *adminController) askController(msg controller.Message, w metaWaiter) {
	id := ctl.token()
	w.since = ctl.now
	ctl.ctlWaiters[id] = w
	ctl.ctlPort.AskController(ctl.leader, id, msg, controllerAskTimeoutMs)
}

// controllerMessage is the request that has the controller create what rec describes
// (the record it proposes carries the placement); ok is false for records the broker
// proposes itself (deletions, configs).
func (ctl *adminController) controllerMessage(rec meta.Record, w metaWaiter) (
	controller.Message, bool) {
	var assign [][]int32
	switch op := w.op.(type) {
	case *opCreateTopics:
		assign = op.assign[w.i]
	case *opCreatePartitions:
		assign = op.assign[w.i]
	}
	switch rec.Kind {
	case meta.KindTopicCreated:
		return controller.CreateTopic{Name: rec.Topic, TopicID: rec.TopicID,
			Partitions: rec.Partitions, ReplicationFactor: rec.ReplicationFactor,
			Configs: rec.Configs, Assignment: assign}, true
	case meta.KindPartitionsAdded:
		m := controller.CreatePartitions{Topic: rec.Topic, Count: rec.Partitions,
			Assignment: assign}
		if t := ctl.image.Topic(rec.Topic); t != nil {
			m.TopicID = t.ID
		}
		return m, true
	}
	return nil, false
}

// controllerAnswered continues what waited for the controller's answer.
func (ctl *adminController) controllerAnswered(in ControllerAnswer) {
	if ctl.reassignAnswered(in) || ctl.unregisterAnswered(in) || ctl.electAnswered(in) {
		return
	}
	w, ok := ctl.ctlWaiters[in.ID]
	if !ok {
		ctl.lg.Warn("controller answer for no request", zap.Uint64("id", in.ID))
		return
	}
	delete(ctl.ctlWaiters, in.ID)
	var err error
	switch {
	case in.Err != nil:
		err = fmt.Errorf("the controller did not answer: %w", in.Err)
	case in.Resp == nil:
		err = errors.New("the controller answered nothing")
	case in.Resp.ErrCode() != 0:
		err = &controllerError{code: in.Resp.ErrCode(), msg: refusalMessage(in.Resp)}
	}
	if w.op == nil {
		ctl.pidBlockFromController(in.Resp, err)
		return
	}
	ctl.adminAnswered(w.op, w.i, err)
}

func refusalMessage(resp controller.Response) string {
	switch r := resp.(type) {
	case controller.CreateTopicResponse:
		return r.Message
	case controller.CreatePartitionsResponse:
		return r.Message
	case controller.UnregisterBrokerResponse:
		return r.Message
	}
	return ""
}

// manualAssignment returns a CreateTopics manual assignment as replica lists in
// partition order (planLayout checked the partitions are 0..n-1).
func manualAssignment(in []kmsg.CreateTopicsRequestTopicReplicaAssignment) [][]int32 {
	out := make([][]int32, len(in))
	for _, a := range in {
		out[a.Partition] = a.Replicas
	}
	return out
}

// forward is a CreateTopics sent to the controller's node on this node's behalf: the
// auto-creation of a Metadata request (op nil) or the offsets topic's (op).
type forward struct {
	op    *opOffsetsTopic
	names []string
	since core.Time
}

// forwardCreateTopics sends a CreateTopics for topics to the controller's node, as a
// client would; forwardAnswered continues op (nil: nobody waits) with its reply. It
// returns false when no controller is known.
func (ctl *adminController) forwardCreateTopics(topics []kmsg.CreateTopicsRequestTopic,
	op *opOffsetsTopic) bool {
	if ctl.leader < 0 || len(topics) == 0 {
		return false
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics, req.TimeoutMillis = topics, controllerAskTimeoutMs
	f := forward{op: op, since: ctl.now}
	for _, t := range topics {
		f.names = append(f.names, t.Topic)
		ctl.forwarding[t.Topic] = true
	}
	id := ctl.token()
	ctl.forwards[id] = f
	ctl.lg.Debug("topic creation forwarded to the controller", zap.Int32("controller",
		ctl.leader), zap.Strings("topics", f.names))
	ctl.env.SendPeer(PeerRequest{Node: ctl.leader, ID: id, Msg: req,
		TimeoutMs: controllerAskTimeoutMs})
	return true
}

// forwardAnswered takes the reply to a forwarded CreateTopics; false when in answers
// no forward.
func (ctl *adminController) forwardAnswered(in PeerReply) bool {
	f, ok := ctl.forwards[in.ID]
	if !ok {
		return false
	}
	delete(ctl.forwards, in.ID)
	for _, name := range f.names {
		delete(ctl.forwarding, name)
	}
	resp, _ := in.Msg.(*kmsg.CreateTopicsResponse)
	switch {
	case in.Err != nil || resp == nil:
		ctl.lg.Info("forwarded topic creation not answered", zap.Int32("node", in.Node),
			zap.Strings("topics", f.names), zap.Error(in.Err))
	default:
		for _, t := range resp.Topics {
			if t.ErrorCode != 0 && t.ErrorCode != kerr.TopicAlreadyExists.Code {
				msg := ""
				if t.ErrorMessage != nil {
					msg = *t.ErrorMessage
				}
				ctl.lg.Info("forwarded topic creation refused", zap.String("topic", t.Topic),
					zap.Int16("code", t.ErrorCode), zap.String("why", msg))
			}
		}
	}
	if f.op != nil {
		ctl.offsetsForwarded(f.op)
	}
	return true
}

// autoCreateElsewhere has the controller's node create the topics a Metadata request
// may auto-create, on a quorum node that is not the controller. They are answered
// LEADER_NOT_AVAILABLE now, as Kafka answers a topic whose creation is under way, and
// exist once this node applies their record: clients retry. The node's own bounds on
// auto-creation apply (limits.go); a topic already forwarded is not sent again.
func (ctl *adminController) autoCreateElsewhere(r Request,
	m *kmsg.MetadataRequest) map[string]topicError {
	failed := map[string]topicError{}
	var topics []kmsg.CreateTopicsRequestTopic
	deferred := 0
	for _, name := range ctl.autoCreatable(r, m) {
		failed[name] = topicError{code: kerr.LeaderNotAvailable.Code}
		if ctl.forwarding[name] || ctl.leader < 0 {
			continue
		}
		if !ctl.autoCreateAdmits(len(topics)) {
			deferred++
			continue
		}
		ctl.creation.auto.spend(ctl.cfg.NumPartitions)
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, -1, -1
		topics = append(topics, t)
	}
	if deferred > 0 {
		ctl.autoCreateDeferred(deferred)
	}
	ctl.forwardCreateTopics(topics, nil)
	return failed
}

// pendingController lists the requests to the controller and the forwarded creations
// awaiting their answers.
func (ctl *adminController) pendingController(out []PendingOp) []PendingOp {
	out = ctl.pendingReassigns(out)
	out = ctl.pendingUnregisters(out)
	for id, w := range ctl.ctlWaiters {
		out = append(out, w.pending(PendingController,
			fmt.Sprintf("controller answer id=%d for %v", id, w.kind)))
	}
	ids := make([]uint64, 0, len(ctl.forwards))
	for id := range ctl.forwards {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		f := ctl.forwards[id]
		what := "forwarded auto-creation"
		if f.op != nil {
			what = "forwarded create-offsets-topic"
		}
		out = append(out, PendingOp{Kind: PendingController, What: what,
			Since: f.since,
			Waits: fmt.Sprintf("CreateTopics reply id=%d for %v", id, f.names)})
	}
	return out
}
