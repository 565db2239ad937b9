package broker

// Admin changes forwarded to the active controller's node (docs/controller.md,
// "Forwarded admin changes"; KIP-590).
//
// CreateAcls, DeleteAcls, AlterClientQuotas, AlterUserScramCredentials, AlterConfigs and
// IncrementalAlterConfigs change the replicated metadata, and only the quorum's leader
// can propose. Kafka clients send them to any broker, so a quorum node that is not the
// leader does not run them: after authorizing the client (authorize.go; refused items
// are taken out and answered here, as on any node) it wraps what is left in an Envelope
// to the leader's node (envelope.go), which runs it through its admin queue and answers
// once its records committed. The answer comes back to the client unchanged, so
// "created" means committed. This node applies the records when it applies the
// metadata log, usually within a heartbeat: a DescribeAcls sent here right after may
// not list a binding yet; on the controller's node it does.
//
// A forward is never a false success: no leader known, or an Envelope answered
// NOT_CONTROLLER (the leadership moved before it arrived) → NOT_CONTROLLER for every
// item; no answer within controllerAskTimeoutMs, or a link that failed → REQUEST_TIMED_OUT
// (the change may still commit, as a timed-out request's may on Kafka). Both are
// retriable: the client sends it again, to a node that by then knows the new leader.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
)

// opForward is a client's admin change forwarded to the controller's node. It runs
// through the admin queue like a change this node makes, so that the changes a node
// receives reach the controller in the order it received them; id is its Envelope's
// peer request id and to the node it went to, once sent.
type opForward struct {
	adminBase
	id uint64
	to int32
}

// forwardAdmin queues r for the active controller's node when this node is a quorum
// node that does not lead; false when r runs here.
func (ctl *adminController) forwardAdmin(r Request) bool {
	if r.Forwarded || !ctl.notController() {
		return false
	}
	ctl.serialize(&opForward{adminBase: adminBase{req: r}})
	return true
}

// runForward sends op's request in an Envelope to the quorum leader's node;
// forwardAnswered continues. With no leader known, or this node leading by now, the
// client is answered NOT_CONTROLLER and retries.
func (ctl *adminController) runForward(op *opForward) {
	r := op.req
	if !ctl.notController() || ctl.leader < 0 {
		ctl.reply(r, forwardFailure(r.Msg, kerr.NotController.Code,
			"The active controller moved or is not known yet; retry."))
		ctl.adminFinished(op)
		return
	}
	env := kmsg.NewPtrEnvelopeRequest()
	env.RequestData = encodeEnvelopeRequest(r.Msg, r.ClientID)
	env.RequestPrincipal, env.ClientHostAddress = []byte(r.Principal), []byte(r.Host)
	op.id, op.to, op.phase = ctl.token(), ctl.leader, adminForwarding
	if ctl.adminForwards == nil {
		ctl.adminForwards = map[uint64]*opForward{}
	}
	ctl.adminForwards[op.id] = op
	ctl.lg.Debug("admin request forwarded to the controller",
		zap.String("api", kmsg.NameForKey(r.Msg.Key())), zap.Int32("controller", op.to))
	if mutantOn("forward-answers-early") {
		ctl.reply(r, forwardFailure(r.Msg, 0, ""))
	}
	ctl.env.SendPeer(PeerRequest{Node: op.to, ID: op.id, Msg: env,
		TimeoutMs: controllerAskTimeoutMs})
}

// adminForwardAnswered answers the client of a forwarded admin change with the
// controller node's reply; false when in answers no such forward.
func (ctl *adminController) adminForwardAnswered(in PeerReply) bool {
	op, ok := ctl.adminForwards[in.ID]
	if !ok {
		return false
	}
	delete(ctl.adminForwards, in.ID)
	defer ctl.adminFinished(op)
	if mutantOn("forward-answers-early") {
		return true
	}
	req := op.req.Msg
	env, _ := in.Msg.(*kmsg.EnvelopeResponse)
	var resp kmsg.Response
	var err error
	switch {
	case in.Err != nil || env == nil:
		err = fmt.Errorf("forwarded to the controller (node %d), not answered: %v", op.to,
			in.Err)
		resp = forwardFailure(req, kerr.RequestTimedOut.Code, err.Error())
	case env.ErrorCode == kerr.NotController.Code:
		resp = forwardFailure(req, env.ErrorCode, fmt.Sprintf("Node %d is no longer "+
			"the active controller; retry.", op.to))
	case env.ErrorCode != 0:
		err = kerr.ErrorForCode(env.ErrorCode)
		resp = forwardFailure(req, kerr.UnknownServerError.Code, fmt.Sprintf(
			"The controller (node %d) refused the forwarded request: %v", op.to, err))
	default:
		if resp, err = decodeEnvelopeResponse(req, env.ResponseData); err != nil {
			resp = forwardFailure(req, kerr.RequestTimedOut.Code, fmt.Sprintf(
				"The controller's (node %d) answer does not decode: %v", op.to, err))
		}
	}
	if err != nil {
		ctl.lg.Info("forwarded admin request failed",
			zap.String("api", kmsg.NameForKey(req.Key())), zap.Int32("controller", op.to),
			zap.Error(err))
	}
	ctl.reply(op.req, resp)
	return true
}

// forwardFailure is the answer to req with every item failed with code (0: an empty
// success, only for the planted bug).
func forwardFailure(req kmsg.Request, code int16, msg string) kmsg.Response {
	var m *string
	if msg != "" {
		m = &msg
	}
	switch r := req.(type) {
	case *kmsg.AlterConfigsRequest:
		res := make([]alterResult, len(r.Resources))
		for i := range res {
			res[i] = alterResult{code, m}
		}
		return alterConfigsResponse(r, res)
	case *kmsg.IncrementalAlterConfigsRequest:
		res := make([]alterResult, len(r.Resources))
		for i := range res {
			res[i] = alterResult{code, m}
		}
		return incrementalAlterConfigsResponse(r, res)
	}
	resp := denyWhole(req, code)
	switch rr := resp.(type) {
	case *kmsg.CreateACLsResponse:
		for i := range rr.Results {
			rr.Results[i].ErrorMessage = m
		}
	case *kmsg.DeleteACLsResponse:
		for i := range rr.Results {
			rr.Results[i].ErrorMessage = m
		}
	case *kmsg.AlterClientQuotasResponse:
		for i := range rr.Entries {
			rr.Entries[i].ErrorMessage = m
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for i := range rr.Results {
			rr.Results[i].ErrorMessage = m
		}
	default:
		core.Invariant(false, "B11", "no forward failure for %T", req)
	}
	return resp
}
