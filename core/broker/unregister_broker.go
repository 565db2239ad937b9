package broker

// UnregisterBroker (key 64), version 0 (KIP-631's `kafka-cluster unregister`).
//
// Removes a dead broker's registration from the cluster's metadata. Any node takes it
// and asks the active controller (core/controller/unregister.go), over the wire when
// the controller is elsewhere; the controller refuses a voter of the metadata quorum,
// a broker not registered (BROKER_ID_NOT_REGISTERED), a live one and one still hosting
// replicas (INVALID_REQUEST, with the reason in ErrorMessage), else commits a
// BrokerUnregistered record and answers once it committed. A node without a metadata
// quorum has no other broker to remove: INVALID_REQUEST. No quorum leader known, or
// the controller lost its leadership meanwhile: NOT_CONTROLLER (retriable); no answer
// within the request timeout: REQUEST_TIMED_OUT (the record may commit or not).
// Authorization: ALTER on the cluster, or CLUSTER_ACTION (a peer forwarding a request
// it authorized).

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
)

// unregisterAsk is an UnregisterBroker waiting for the controller's answer.
type unregisterAsk struct {
	req   Request
	node  int32
	since core.Time
}

func (ctl *adminController) handleUnregisterBroker(r Request, m *kmsg.UnregisterBrokerRequest) {
	resp := m.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	resp.SetVersion(m.Version)
	if ctl.ctlPort == nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = strp("This node runs without a metadata quorum (--voters): " +
			"it is the cluster's only broker.")
		ctl.reply(r, resp)
		return
	}
	id := ctl.token()
	if ctl.unregisters == nil {
		ctl.unregisters = map[uint64]unregisterAsk{}
	}
	ctl.unregisters[id] = unregisterAsk{req: r, node: m.BrokerID, since: ctl.now}
	ctl.lg.Info("broker unregistration asked", zap.Int32("broker", m.BrokerID),
		zap.String("principal", r.Principal), zap.Int32("controller", ctl.leader))
	ctl.ctlPort.AskController(ctl.leader, id, controller.UnregisterBroker{NodeID: m.BrokerID},
		controllerAskTimeoutMs)
}

// unregisterAnswered takes the controller's answer to an UnregisterBroker; false when
// in answers something else.
func (ctl *adminController) unregisterAnswered(in ControllerAnswer) bool {
	w, ok := ctl.unregisters[in.ID]
	if !ok {
		return false
	}
	delete(ctl.unregisters, in.ID)
	m := w.req.Msg.(*kmsg.UnregisterBrokerRequest)
	resp := m.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	resp.SetVersion(m.Version)
	r, _ := in.Resp.(controller.UnregisterBrokerResponse)
	switch {
	case in.Err != nil && ctl.leader < 0:
		resp.ErrorCode = kerr.NotController.Code
		resp.ErrorMessage = strp("No metadata quorum leader is known; retry.")
	case in.Err != nil:
		resp.ErrorCode = kerr.RequestTimedOut.Code
		resp.ErrorMessage = strp(fmt.Sprintf("The controller did not answer (%v); the "+
			"broker may or may not be unregistered.", in.Err))
	case in.Resp == nil:
		resp.ErrorCode = kerr.UnknownServerError.Code
	default:
		resp.ErrorCode = in.Resp.ErrCode()
		if r.Message != "" {
			resp.ErrorMessage = strp(r.Message)
		}
	}
	if resp.ErrorCode == 0 {
		ctl.lg.Info("broker unregistered", zap.Int32("broker", w.node))
	}
	ctl.reply(w.req, resp)
	return true
}

// pendingUnregisters lists the unregistrations waiting for the controller.
func (ctl *adminController) pendingUnregisters(out []PendingOp) []PendingOp {
	ids := make([]uint64, 0, len(ctl.unregisters))
	for id := range ctl.unregisters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		w := ctl.unregisters[id]
		out = append(out, PendingOp{Kind: PendingController,
			What:  fmt.Sprintf("unregistration of broker %d", w.node),
			Since: w.since, Waits: fmt.Sprintf("controller answer id=%d", id),
			Conn: w.req.Conn, ID: w.req.ID, HasRequest: true})
	}
	return out
}
