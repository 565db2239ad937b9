package controller

import (
	"slices"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// reconcile proposes what the cluster needs that no proposal in flight is already
// doing: the cluster id at the first start, fencing brokers whose session expired, and
// moving leadership and ISR places off brokers that are not eligible. It runs after
// every input but scans only when something changed, and proposes at most
// MaxInFlight records at once. After a rejected proposal it waits RetryBackoffMs.
func (c *Controller) reconcile() {
	if !c.active {
		return
	}
	c.fenceExpired() // time passing is a change of its own
	c.drainReassigns()
	if c.dirty && c.retry.id == 0 {
		c.dirty = false
		c.ensureCluster()
		c.shutDown()
		c.repairPartitions()
		c.completeReassignments()
	}
	c.armExpiry()
}

func (c *Controller) ensureCluster() {
	if c.image.ClusterID() == "" && !c.isBusy(clusterKey()) && c.roomForMore() {
		c.propose(Pending{Op: OpCreateCluster, Key: clusterKey(),
			Record: meta.Record{Kind: meta.KindClusterCreated, ClusterID: c.cfg.ClusterID}})
	}
}

// fenceExpired fences every broker (unfenced or shutting down) not heard from within
// broker.session.timeout.ms, or within the grace after its heartbeat connection closed
// (connloss.go).
func (c *Controller) fenceExpired() {
	if c.retry.id != 0 {
		return
	}
	for _, b := range c.image.Brokers() {
		last, ok := c.contacts[b.ID]
		if !ok {
			c.assume(b.ID) // registered by an earlier controller just now
			continue
		}
		if b.State == meta.BrokerFenced || c.now < c.sessionEnd(b.ID) ||
			c.isBusy(brokerKey(b.ID)) || !c.roomForMore() {
			continue
		}
		why := "broker session expired: fencing it"
		if _, cut := c.cutoffs[b.ID]; cut && !Expired(last, c.now, c.cfg.SessionTimeoutMs) {
			why = "broker's heartbeat connection closed and it did not heartbeat again " +
				"within the grace: fencing it"
		}
		c.lg.Warn(why, zap.Int32("broker", b.ID),
			zap.Int64("silent_ms", int64(c.now-last)/1e6))
		c.propose(Pending{Op: OpFence, Key: brokerKey(b.ID), Record: meta.Record{
			Kind: meta.KindBrokerChange, NodeID: b.ID, BrokerEpoch: b.Epoch,
			BrokerState: meta.BrokerFenced}})
	}
}

// electable says whether a broker may be elected now: eligible, and heard from by this
// controller since it became active (Standing.Heard).
func (c *Controller) electable() func(int32) bool {
	eligible := Eligible(c.image)
	return func(id int32) bool {
		return eligible(id) && (c.heardNow(id) || mutantOn("shrinks-isr-to-unheard"))
	}
}

// heardNow says whether this controller has had a heartbeat of the broker's current
// registration since it became active, and its heartbeat connection has not closed
// since (Standing.Heard): a closed connection is most likely a dead process, which
// the grace only gives a chance to prove otherwise (connloss.go).
func (c *Controller) heardNow(id int32) bool {
	b, ok := c.image.Broker(id)
	e, beat := c.beats[id]
	_, cut := c.cutoffs[id]
	return ok && beat && e == b.Epoch && !cut
}

// standing is what this controller knows of the brokers now, for RepairLost.
func (c *Controller) standing() Standing {
	return Standing{Eligible: Eligible(c.image), Lost: Lost(c.image), Heard: c.heardNow}
}

// repairPartitions moves every partition off ineligible brokers (Repair).
func (c *Controller) repairPartitions() {
	st := c.standing()
	for _, name := range c.image.TopicNames() {
		t := c.image.Topic(name)
		for p, s := range t.States {
			k := partitionKey(name, int32(p))
			if c.isBusy(k) {
				continue
			}
			next, unclean, changed := RepairLost(s, st, c.cfg.UncleanLeaderElection)
			if !changed {
				continue
			}
			if !c.roomForMore() {
				c.dirty = true // the rest when answers free room
				return
			}
			if unclean {
				c.lg.Warn("unclean leader election: the new leader was not in the ISR, "+
					"records acknowledged by the old ISR may be lost",
					zap.String("topic", name), zap.Int("partition", p),
					zap.Int32("leader", next.Leader), zap.Int32s("old_isr", s.ISR))
			} else if next.Leader == meta.NoLeader && s.Leader != meta.NoLeader {
				c.lg.Warn("partition has no eligible leader: offline until an ISR member "+
					"returns", zap.String("topic", name), zap.Int("partition", p),
					zap.Int32s("isr", next.ISR))
			}
			c.propose(Pending{Op: OpRepair, Key: k, Record: meta.Record{
				Kind: meta.KindPartitionChange, Topic: name, Partition: int32(p), State: next,
				Unclean: unclean}})
		}
	}
}

// rebalanceLeaders moves leadership back to preferred replicas (the automatic
// rebalance, every leader.imbalance.check.interval.seconds).
func (c *Controller) rebalanceLeaders() {
	eligible := c.electable()
	for _, name := range c.image.TopicNames() {
		for p, s := range c.image.Topic(name).States {
			k := partitionKey(name, int32(p))
			if c.isBusy(k) || !c.roomForMore() {
				continue
			}
			if next, ok, _ := Preferred(s, eligible); ok {
				c.propose(Pending{Op: OpPreferred, Key: k, Record: meta.Record{
					Kind: meta.KindPartitionChange, Topic: name, Partition: int32(p),
					State: next}})
			}
		}
	}
}

// armExpiry sets the expiry timer for the earliest session end still to come of a
// broker that is not fenced yet. A session already over whose fence could not be
// proposed yet (a proposal for the broker in flight, no room, a retry backoff) needs no
// timer: the answer or the retry timer that unblocks it comes with a step.
func (c *Controller) armExpiry() {
	var at core.Time
	found := false
	for _, b := range c.image.Brokers() {
		if b.State == meta.BrokerFenced || c.isBusy(brokerKey(b.ID)) {
			continue
		}
		end := c.sessionEnd(b.ID)
		if end <= c.now {
			continue
		}
		if !found || end < at {
			at, found = end, true
		}
	}
	if !found {
		c.disarm(&c.expiry)
		return
	}
	if c.expiry.id != 0 && c.expiry.at <= at {
		return // it fires first and is set again then: no churn at every heartbeat
	}
	c.arm(&c.expiry, timerExpiry, at)
}

// shutDown marks shutting down each broker with a ControlledShutdown waiting that is
// still unfenced (its ShuttingDown record not proposed yet, or lost to an unknown
// outcome).
func (c *Controller) shutDown() {
	for _, id := range sortedKeys(c.shutdowns) {
		b, ok := c.image.Broker(id)
		if !ok || b.State != meta.BrokerUnfenced || c.isBusy(brokerKey(id)) ||
			!c.roomForMore() || !slices.ContainsFunc(c.shutdowns[id],
			func(w shutdownWait) bool { return w.epoch == b.Epoch }) {
			continue
		}
		c.propose(Pending{Op: OpShutdown, Key: brokerKey(id), Record: meta.Record{
			Kind: meta.KindBrokerChange, NodeID: id, BrokerEpoch: b.Epoch,
			BrokerState: meta.BrokerShuttingDown}})
	}
}

// answerShutdowns answers the controlled shutdowns that are done, and those whose
// registration is gone or was replaced.
func (c *Controller) answerShutdowns() {
	for _, id := range sortedKeys(c.shutdowns) {
		b, ok := c.image.Broker(id)
		done := ok && b.State != meta.BrokerUnfenced && ShutdownDone(c.image, id)
		var left []shutdownWait
		for _, w := range c.shutdowns[id] {
			switch {
			case !ok:
				c.answerParked(w.req, ControlledShutdownResponse{Err: codeNotRegistered})
			case w.epoch != b.Epoch:
				c.answerParked(w.req, ControlledShutdownResponse{Err: codeStaleBrokerEpoch})
			case done:
				c.answerParked(w.req, ControlledShutdownResponse{})
			default:
				left = append(left, w)
			}
		}
		if len(left) == 0 {
			delete(c.shutdowns, id)
		} else {
			c.shutdowns[id] = left
		}
	}
}
