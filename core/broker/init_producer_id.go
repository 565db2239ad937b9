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

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// producerIDBlock is how many ids one committed block holds.
const producerIDBlock = 1000

// maxPIDWaiters bounds requests queued behind a block commit.
const maxPIDWaiters = 10_000

func (b *Broker) handleInitProducerID(r Request, m *kmsg.InitProducerIDRequest) {
	resp := m.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if m.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		b.reply(r, resp)
		return
	}
	if len(b.pidWaiters) >= maxPIDWaiters {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		b.reply(r, resp)
		return
	}
	b.allocProducerID(pidWaiter{req: r, resp: resp, since: b.now})
}

// pidWaiter is an InitProducerId request waiting for an id.
type pidWaiter struct {
	req   Request
	resp  *kmsg.InitProducerIDResponse
	since core.Time
}

// answerPID answers w with pid, or with a retriable error when err is set.
func (b *Broker) answerPID(w pidWaiter, pid int64, err error) {
	if err != nil {
		w.resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	} else {
		w.resp.ProducerID, w.resp.ProducerEpoch = pid, 0
	}
	b.reply(w.req, w.resp)
}

// allocProducerID answers w with an unused producer id, committing a new block first
// when the current one is used up.
func (b *Broker) allocProducerID(w pidWaiter) {
	if b.nextPID < b.pidBlockEnd {
		pid := b.nextPID
		b.nextPID++
		b.answerPID(w, pid, nil)
		return
	}
	b.pidWaiters = append(b.pidWaiters, w)
	if b.pidBlockInFlight {
		return
	}
	b.pidBlockInFlight = true
	start := b.image.NextProducerID()
	rec := meta.Record{Kind: meta.KindProducerIDBlock, NextProducerID: start + producerIDBlock}
	b.propose(rec, metaWaiter{}) // answered in pidBlockAnswered
}

// pidBlockAnswered hands out the committed block to the waiting requests, in order.
func (b *Broker) pidBlockAnswered(err error) {
	b.pidBlockInFlight = false
	waiters := b.pidWaiters
	b.pidWaiters = nil
	if err != nil {
		b.lg.Error("producer id block not committed", zap.Error(err))
		for _, w := range waiters {
			b.answerPID(w, -1, err)
		}
		return
	}
	// The image has applied the block; hand it out from its start.
	b.nextPID, b.pidBlockEnd = b.image.NextProducerID()-producerIDBlock, b.image.NextProducerID()
	for _, w := range waiters {
		b.allocProducerID(w)
	}
}
