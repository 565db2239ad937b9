package controller

import (
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// Fencing a dead broker early. A broker's heartbeats reach the controller on a
// connection from the broker's own process; when that process dies (kill -9, a crash,
// an OOM kill) its kernel closes the socket, and the controller's node sees the close
// at once. Waiting for the session timeout (broker.session.timeout.ms, 9 s) would leave
// every partition the broker led without a leader meanwhile, so a close shortens the
// broker's session to ConnectionLossGraceMs from now. A live broker whose connection
// was merely reset (a middlebox, its own client closing it) reconnects and heartbeats at
// once (core/lifecycle: it heartbeats as soon as its link to the controller goes down),
// well within the grace, and that heartbeat restores the full session. A paused process
// or a partitioned network closes nothing: those still wait for the session timeout,
// as in Kafka, so nothing that happens under load (a slow loop, a late heartbeat)
// fences sooner than before.
//
// The close names the broker epoch the connection's heartbeats carried: a close from an
// older registration (the old process of a node that registered again since) fences
// nothing. Only the active controller acts on it; liveness is volatile and starts afresh
// at each activation.

// connectionClosed shortens the session of the broker whose heartbeat connection closed.
func (c *Controller) connectionClosed(in BrokerConnectionClosed) {
	if !c.active || c.cfg.ConnectionLossGraceMs <= 0 {
		return
	}
	b, ok := c.image.Broker(in.NodeID)
	if !ok || (b.State == meta.BrokerFenced && mutantOn("conn-close-ignores-fenced")) {
		return
	}
	if b.Epoch != in.BrokerEpoch && !mutantOn("conn-close-ignores-epoch") {
		c.lg.Debug("heartbeat connection of an older registration closed: ignored",
			zap.Int32("broker", in.NodeID), zap.Int64("closed_epoch", in.BrokerEpoch),
			zap.Int64("broker_epoch", b.Epoch))
		return
	}
	if _, ok := c.contacts[b.ID]; !ok {
		c.assume(b.ID) // registered by an earlier controller just now
	}
	cut := c.now.AddMillis(c.cfg.ConnectionLossGraceMs)
	if cut >= c.sessionEnd(b.ID) {
		return
	}
	// A fenced broker's close counts too: its unfence may be in flight, and once it
	// commits the broker must not be taken for heard (electable, an ISR to shrink to)
	// on the strength of heartbeats from before the close (seed 1089: a dead broker was
	// elected alone in its ISR). The cutoff also fences it after the grace once
	// unfenced.
	c.cutoffs[b.ID] = cut
	c.dirty = true
	c.lg.Info("broker's heartbeat connection closed: fencing it unless it heartbeats "+
		"again within the grace", zap.Int32("broker", b.ID), zap.Int64("broker_epoch",
		b.Epoch), zap.Int64("grace_ms", c.cfg.ConnectionLossGraceMs),
		zap.Bool("fenced", b.State == meta.BrokerFenced))
}

// heard records contact with a broker (a registration, a valid heartbeat, a controlled
// shutdown): its session starts again, in full.
func (c *Controller) heard(id int32) {
	c.contacts[id] = c.now
	delete(c.assumed, id)
	delete(c.registering, id)
	if !mutantOn("heartbeat-keeps-conn-cutoff") {
		delete(c.cutoffs, id)
	}
}

// assume starts the session of a broker this controller has not heard from: a
// registered broker gets a full session to find a newly active controller.
func (c *Controller) assume(id int32) {
	c.contacts[id] = c.now
	if !mutantOn("assumed-contact-blocks-registration") {
		c.assumed[id] = true
	}
}

// sessionEnd is when broker id is fenced unless heard from again: a session after its
// last contact, or sooner when its heartbeat connection closed since (cutoffs).
func (c *Controller) sessionEnd(id int32) core.Time {
	end := c.contacts[id].AddMillis(c.cfg.SessionTimeoutMs)
	if cut, ok := c.cutoffs[id]; ok && cut < end {
		return cut
	}
	return end
}

// liveContacts is contacts without the brokers whose heartbeat connection closed and
// that did not heartbeat within the grace: their process is taken for dead, so a new
// process of the node may register at once (DecideRegister) instead of a session after
// the old one's last heartbeat. Brokers this controller has not heard from since it
// became active are left out too: the session it assumed for them keeps them unfenced
// for a while, but says nothing about a live process. Counting it would refuse a
// restarted node's registration for a whole session after every change of controller,
// and under a quorum whose leader moves more often than that, never (while the old
// registration, unfenced, kept ISR places its process no longer backs).
func (c *Controller) liveContacts() Contacts {
	out := make(Contacts, len(c.contacts))
	for id, at := range c.contacts {
		if cut, ok := c.cutoffs[id]; (ok && c.now >= cut) || c.assumed[id] ||
			c.newcomerContact(id) {
			continue
		}
		out[id] = at
	}
	return out
}

// newcomerContact says whether broker id's last contact was a new incarnation's
// registration that has not applied (its proposal timed out, or is still in flight):
// that contact says nothing of the registered process, so it does not make the
// newcomer's next attempt a duplicate of it. Counted, it did (seed 761: a restarted
// node's registration was proposed, timed out, and its retries were refused for a
// whole session on the strength of its own first attempt).
func (c *Controller) newcomerContact(id int32) bool {
	inc, ok := c.registering[id]
	if !ok || mutantOn("newcomer-contact-counts") {
		return false
	}
	b, registered := c.image.Broker(id)
	return !registered || b.Incarnation != inc
}
