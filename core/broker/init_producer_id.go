package broker

// InitProducerId (API key 22), versions 0–4.
//
// Behaviour: hands an idempotent producer a fresh producer id with epoch 0. Ids come
// from blocks committed to the metadata log, so a restarted node never hands out an id
// twice. A request with a transactional id is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED until transactions exist (clients surface it
// at once instead of retrying forever). A request that carries an existing id and
// epoch (KIP-360 epoch bump) also gets a fresh id: without transactions nothing needs
// the old id fenced.
//
// With a metadata quorum the blocks come from the cluster's controller (Kafka's
// AllocateProducerIds, asked of the quorum leader's controller, here or on a peer), so
// that the ids two nodes hand out never overlap.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

// producerIDBlock is how many ids one committed block holds.
const producerIDBlock = 1000

// maxPIDWaiters bounds requests queued behind a block commit.
const maxPIDWaiters = 10_000

func (ctl *adminController) handleInitProducerID(r Request, m *kmsg.InitProducerIDRequest) {
	resp := m.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if m.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		ctl.reply(r, resp)
		return
	}
	if len(ctl.pidWaiters) >= maxPIDWaiters {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		ctl.reply(r, resp)
		return
	}
	ctl.allocProducerID(pidWaiter{req: r, resp: resp, since: ctl.now})
}

// pidWaiter is an InitProducerId request waiting for an id.
type pidWaiter struct {
	req   Request
	resp  *kmsg.InitProducerIDResponse
	since core.Time
}

// answerPID answers w with pid, or with a retriable error when err is set.
func (ctl *adminController) answerPID(w pidWaiter, pid int64, err error) {
	if err != nil {
		w.resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	} else {
		w.resp.ProducerID, w.resp.ProducerEpoch = pid, 0
	}
	ctl.reply(w.req, w.resp)
}

// allocProducerID answers w with an unused producer id, committing a new block first
// when the current one is used up.
func (ctl *adminController) allocProducerID(w pidWaiter) {
	if ctl.nextPID < ctl.pidBlockEnd {
		pid := ctl.nextPID
		ctl.nextPID++
		ctl.answerPID(w, pid, nil)
		return
	}
	ctl.pidWaiters = append(ctl.pidWaiters, w)
	if ctl.pidBlockInFlight {
		return
	}
	ctl.pidBlockInFlight = true
	if ctl.ctlPort != nil {
		// With a quorum the controller hands out blocks (Kafka's AllocateProducerIds),
		// so that no two nodes draw the same one; answered in pidBlockFromController.
		ctl.askController(controller.AllocateProducerIDs{NodeID: ctl.cfg.NodeID},
			metaWaiter{kind: meta.KindProducerIDBlock})
		return
	}
	start := ctl.image.NextProducerID()
	rec := meta.Record{Kind: meta.KindProducerIDBlock, NextProducerID: start + producerIDBlock}
	ctl.propose(rec, metaWaiter{}) // answered in pidBlockAnswered
}

// pidBlockAnswered hands out the committed block to the waiting requests, in order.
func (ctl *adminController) pidBlockAnswered(err error) {
	// The image has applied the block; hand it out from its start.
	next := ctl.image.NextProducerID()
	ctl.pidBlockReady(next-producerIDBlock, next, err)
}

// pidBlockFromController hands out the block the controller allocated (a peer's
// controller: this node's image may not have applied it yet).
func (ctl *adminController) pidBlockFromController(resp controller.Response, err error) {
	r, ok := resp.(controller.AllocateProducerIDsResponse)
	if err == nil && (!ok || r.Len <= 0 || r.Start < 0) {
		err = fmt.Errorf("the controller answered %T %+v to AllocateProducerIds", resp, resp)
	}
	ctl.pidBlockReady(r.Start, r.Start+int64(r.Len), err)
}

// pidBlockReady hands out the ids [start, end) to the waiting requests, in order, or
// answers them all with a retriable error when err is set.
func (ctl *adminController) pidBlockReady(start, end int64, err error) {
	ctl.pidBlockInFlight = false
	waiters := ctl.pidWaiters
	ctl.pidWaiters = nil
	if err != nil {
		ctl.lg.Error("producer id block not committed", zap.Error(err))
		for _, w := range waiters {
			ctl.answerPID(w, -1, err)
		}
		return
	}
	ctl.nextPID, ctl.pidBlockEnd = start, end
	for _, w := range waiters {
		ctl.allocProducerID(w)
	}
}
