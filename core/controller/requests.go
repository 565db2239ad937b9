package controller

import (
	"slices"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// ProducerIDBlock is how many producer ids one AllocateProducerIDs hands out (Kafka's
// block size, and the broker's own today).
const ProducerIDBlock = 1000

// shutdownWait is a ControlledShutdown waiting for its broker to be off every partition.
type shutdownWait struct {
	req   uint64
	epoch int64
}

// election is an ElectLeaders request waiting for its proposals.
type election struct {
	results     []ElectResult
	outstanding int
}

// request serves one RPC: at once, or when its proposal is answered (C7: exactly once).
func (c *Controller) request(in Request) {
	core.Invariant(in.ID != 0, "C7", "request id 0 is reserved")
	if !c.active {
		c.env.Answer(in.ID, notController(in.Msg))
		return
	}
	switch m := in.Msg.(type) {
	case RegisterBroker:
		c.register(in.ID, m)
	case Heartbeat:
		c.heartbeat(in.ID, m)
	case AlterPartition:
		c.alterPartition(in.ID, m)
	case ControlledShutdown:
		c.controlledShutdown(in.ID, m)
	case CreateTopic:
		c.createTopic(in.ID, m)
	case CreatePartitions:
		c.createPartitions(in.ID, m)
	case AllocateProducerIDs:
		c.allocateProducerIDs(in.ID, m)
	case ElectLeaders:
		c.electLeaders(in.ID, m)
	case AlterReassignments:
		c.alterReassignments(in.ID, m)
	case UnregisterBroker:
		c.unregister(in.ID, m)
	default:
		panic("controller: unknown request message")
	}
}

func notController(m Message) Response {
	switch m.(type) {
	case RegisterBroker:
		return RegisterBrokerResponse{Err: codeNotController}
	case Heartbeat:
		return HeartbeatResponse{Err: codeNotController}
	case AlterPartition:
		return AlterPartitionResponse{Err: codeNotController}
	case ControlledShutdown:
		return ControlledShutdownResponse{Err: codeNotController}
	case CreateTopic:
		return CreateTopicResponse{Err: codeNotController}
	case CreatePartitions:
		return CreatePartitionsResponse{Err: codeNotController}
	case AllocateProducerIDs:
		return AllocateProducerIDsResponse{Err: codeNotController}
	case ElectLeaders:
		return ElectLeadersResponse{Err: codeNotController}
	case AlterReassignments:
		return AlterReassignmentsResponse{Err: codeNotController}
	case UnregisterBroker:
		return UnregisterBrokerResponse{Err: codeNotController}
	default:
		panic("controller: unknown request message")
	}
}

func (c *Controller) register(id uint64, m RegisterBroker) {
	epoch := max(c.epochNext, c.image.MaxBrokerEpoch()) + 1
	d := DecideRegister(c.image, c.cfg.ClusterID, c.liveContacts(), c.now, c.cfg.SessionTimeoutMs,
		epoch, m)
	if !d.Propose {
		if d.Answer.Err != 0 {
			c.lg.Warn("broker registration refused", zap.Int32("broker", m.NodeID),
				zap.Int16("code", d.Answer.Err), zap.String("why", d.Why))
		}
		c.env.Answer(id, d.Answer)
		return
	}
	c.heard(m.NodeID)
	c.registering[m.NodeID] = m.Incarnation
	c.epochNext = epoch
	if d.Record.StorageLost {
		c.lg.Warn("broker registers without the logs of its previous registration (a new "+
			"or lost data directory): it leaves every ISR and stays fenced until it is in "+
			"none", zap.Int32("broker", m.NodeID), zap.Int64("broker_epoch", epoch))
	}
	c.propose(Pending{Op: OpRegister, Key: brokerKey(m.NodeID), Record: d.Record, Request: id})
}

func (c *Controller) heartbeat(id uint64, m Heartbeat) {
	d := DecideHeartbeat(c.image, c.registeredAt[m.NodeID], m)
	if d.Valid {
		c.heard(m.NodeID)
		if c.beats[m.NodeID] != m.BrokerEpoch {
			c.beats[m.NodeID] = m.BrokerEpoch
			c.dirty = true // its partitions may now shrink to it or elect it (RepairLost)
		}
		c.progress[m.NodeID] = Progress{Index: m.MetadataIndex, At: c.now}
	}
	if d.Propose && !c.isBusy(brokerKey(m.NodeID)) {
		c.propose(Pending{Op: OpUnfence, Key: brokerKey(m.NodeID), Record: d.Record})
	}
	c.env.Answer(id, d.Answer)
}

func (c *Controller) alterPartition(id uint64, m AlterPartition) {
	rec, change, code, why := DecideAlterPartition(c.image, m, c.electable())
	if !change {
		if code != 0 {
			c.lg.Info("AlterPartition refused", zap.Int32("broker", m.NodeID),
				zap.String("topic", m.Topic), zap.Int32("partition", m.Partition),
				zap.Int16("code", code), zap.String("why", why))
		}
		s, _, _ := c.image.Partition(m.Topic, m.Partition)
		c.env.Answer(id, AlterPartitionResponse{Err: code, State: s})
		return
	}
	c.propose(Pending{Op: OpAlterPartition, Key: partitionKey(m.Topic, m.Partition),
		Record: rec, Request: id})
}

// controlledShutdown marks the broker shutting down; the reconciler then moves its
// leaderships and ISR places away, and the request is answered when that is done.
func (c *Controller) controlledShutdown(id uint64, m ControlledShutdown) {
	if code := checkBroker(c.image, m.NodeID, m.BrokerEpoch); code != 0 {
		c.env.Answer(id, ControlledShutdownResponse{Err: code})
		return
	}
	c.heard(m.NodeID)
	c.park(id)
	c.shutdowns[m.NodeID] = append(c.shutdowns[m.NodeID], shutdownWait{req: id,
		epoch: m.BrokerEpoch})
	c.dirty = true      // reconcile proposes the ShuttingDown record (shutDown)
	c.answerShutdowns() // fenced or already shutting down: maybe done now
}

// allocateProducerIDs proposes the next block beyond any in flight; a block whose
// proposal failed leaves a gap of ids never handed out, which is harmless.
func (c *Controller) allocateProducerIDs(id uint64, m AllocateProducerIDs) {
	if code := checkBroker(c.image, m.NodeID, m.BrokerEpoch); code != 0 {
		c.env.Answer(id, AllocateProducerIDsResponse{Err: code})
		return
	}
	c.pidNext = max(c.pidNext, c.image.NextProducerID()) + ProducerIDBlock
	c.propose(Pending{Op: OpProducerIDs, Key: Key{Node: -1, Partition: -1}, Request: id,
		Record: meta.Record{Kind: meta.KindProducerIDBlock, NextProducerID: c.pidNext}})
}

// electLeaders proposes a preferred election for each partition that needs one and can
// have one; the request is answered when every proposal is.
func (c *Controller) electLeaders(id uint64, m ElectLeaders) {
	tps := slices.Clone(m.Partitions)
	if len(tps) == 0 {
		for _, name := range c.image.TopicNames() {
			for p := range c.image.Topic(name).States {
				tps = append(tps, core.TopicPartition{Topic: name, Partition: int32(p)})
			}
		}
	}
	sortTPs(tps)
	tps = slices.Compact(tps)
	e := &election{}
	eligible := c.electable()
	st := c.standing()
	for _, tp := range tps {
		s, assigned, ok := c.image.Partition(tp.Topic, tp.Partition)
		if !ok || !assigned {
			e.results = append(e.results, ElectResult{TP: tp, Err: codeUnknownTopicPartition})
			continue
		}
		op, next, elect, unclean, code := OpPreferred, s, false, false, int16(0)
		if m.Unclean {
			op = OpRepair
			next, elect, unclean, code = Unclean(s, st)
		} else {
			next, elect, code = Preferred(s, eligible)
		}
		e.results = append(e.results, ElectResult{TP: tp, Err: code})
		if !elect {
			continue
		}
		if unclean {
			c.lg.Warn("unclean leader election asked by an operator: the new leader was "+
				"not in the ISR, records acknowledged by the old ISR may be lost",
				zap.Stringer("tp", tp), zap.Int32("leader", next.Leader),
				zap.Int32s("old_isr", s.ISR))
		}
		e.outstanding++
		c.propose(Pending{Op: op, Key: partitionKey(tp.Topic, tp.Partition),
			Election: id, Record: meta.Record{Kind: meta.KindPartitionChange,
				Topic: tp.Topic, Partition: tp.Partition, State: next, Unclean: unclean}})
	}
	if e.outstanding == 0 {
		c.env.Answer(id, ElectLeadersResponse{Results: e.results})
		return
	}
	c.park(id)
	c.elections[id] = e
}

// answerPending answers the request waiting on p, if any, with code (0: success).
func (c *Controller) answerPending(p *Pending, code int16) {
	if p.Election != 0 {
		c.electionAnswered(p, code)
		return
	}
	if p.Reassign != 0 {
		c.reassignAnswered(p, code)
		return
	}
	if p.Request == 0 {
		return
	}
	var resp Response
	switch p.Op {
	case OpRegister:
		resp = RegisterBrokerResponse{Err: code, BrokerEpoch: p.Record.BrokerEpoch}
	case OpAlterPartition:
		s, _, _ := c.image.Partition(p.Record.Topic, p.Record.Partition)
		resp = AlterPartitionResponse{Err: code, State: s}
	case OpCreateTopic:
		resp = CreateTopicResponse{Err: code, States: p.Record.PartitionStates}
	case OpCreatePartitions:
		resp = CreatePartitionsResponse{Err: code, States: p.Record.PartitionStates}
	case OpProducerIDs:
		resp = AllocateProducerIDsResponse{Err: code,
			Start: p.Record.NextProducerID - ProducerIDBlock, Len: ProducerIDBlock}
	case OpUnregister:
		resp = UnregisterBrokerResponse{Err: code}
	default:
		core.Invariant(false, "C7", "%v proposal waited on by request %d", p.Op, p.Request)
	}
	if code != 0 {
		resp = zeroed(resp, code)
	}
	c.answerParked(p.Request, resp)
}

// zeroed is resp with only its error code: a failed request carries nothing else,
// except AlterPartition's current state, which helps the leader catch up.
func zeroed(resp Response, code int16) Response {
	switch r := resp.(type) {
	case RegisterBrokerResponse:
		return RegisterBrokerResponse{Err: code}
	case CreateTopicResponse:
		return CreateTopicResponse{Err: code}
	case CreatePartitionsResponse:
		return CreatePartitionsResponse{Err: code}
	case AllocateProducerIDsResponse:
		return AllocateProducerIDsResponse{Err: code}
	case AlterPartitionResponse:
		return r
	}
	return resp
}

func (c *Controller) electionAnswered(p *Pending, code int16) {
	e, ok := c.elections[p.Election]
	if !ok {
		return
	}
	tp := core.TopicPartition{Topic: p.Record.Topic, Partition: p.Record.Partition}
	for i := range e.results {
		if e.results[i].TP == tp && e.results[i].Err == 0 {
			e.results[i].Err = code
		}
	}
	if e.outstanding--; e.outstanding == 0 {
		delete(c.elections, p.Election)
		c.answerParked(p.Election, ElectLeadersResponse{Results: e.results})
	}
}
