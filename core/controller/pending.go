package controller

import (
	"fmt"
	"slices"
	"sort"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// Op says why the controller proposed a record.
type Op uint8

// The controller's operations.
const (
	OpCreateCluster    Op = iota + 1 // ClusterCreated, at the first activation
	OpRegister                       // BrokerRegistered, for a RegisterBroker
	OpUnfence                        // BrokerChange unfenced, for a heartbeat
	OpFence                          // BrokerChange fenced, its session expired
	OpShutdown                       // BrokerChange shutting down, for a ControlledShutdown
	OpRepair                         // PartitionChange off ineligible brokers (Repair)
	OpPreferred                      // PartitionChange to the preferred leader
	OpAlterPartition                 // PartitionChange for an AlterPartition
	OpCreateTopic                    // TopicCreated, for a CreateTopic
	OpProducerIDs                    // ProducerIDBlock, for an AllocateProducerIDs
	OpCreatePartitions               // PartitionsAdded, for a CreatePartitions
)

func (o Op) String() string {
	names := [...]string{"?", "create-cluster", "register", "unfence", "fence", "shutdown",
		"repair", "preferred", "alter-partition", "create-topic", "producer-ids",
		"create-partitions"}
	if int(o) < len(names) {
		return names[o]
	}
	return extraOpName(o)
}

// Key names what a proposal changes: a broker, a partition, or the cluster itself. The
// controller's own decisions (Repair, fencing, rebalancing) wait while any proposal for
// their key is in flight, so it never proposes the same decision twice at once.
type Key struct {
	Node      int32
	Topic     string
	Partition int32
	Cluster   bool
}

func brokerKey(id int32) Key             { return Key{Node: id, Partition: -1} }
func partitionKey(t string, p int32) Key { return Key{Node: -1, Topic: t, Partition: p} }
func clusterKey() Key                    { return Key{Node: -1, Partition: -1, Cluster: true} }

func (k Key) String() string { return fmt.Sprintf("%d/%s/%d", k.Node, k.Topic, k.Partition) }

func (c *Controller) isBusy(k Key) bool       { return c.busy[k] > 0 }
func (c *Controller) roomForMore() bool       { return len(c.pending) < c.cfg.MaxInFlight }
func (c *Controller) pendingTokens() []uint64 { return sortedKeys(c.pending) }

// Pending is one proposal awaiting its answer: a typed record a test or the
// simulator's report can inspect (Controller.Pending).
type Pending struct {
	Token  uint64
	Op     Op
	Key    Key
	Record meta.Record
	// Request is the id of the request answered when the proposal is (0: none).
	Request uint64
	// Election is the ElectLeaders request this proposal is part of (0: none).
	Election uint64
	// Reassign is the AlterReassignments request this proposal is part of (0: none),
	// ReassignAt the partition's place in it (reassign.go).
	Reassign   uint64
	ReassignAt int
	// LeaderEpoch is the quorum leader epoch the controller believed in when proposing.
	LeaderEpoch uint64
}

// Pending returns the proposals in flight, by token.
func (c *Controller) Pending() []Pending {
	out := make([]Pending, 0, len(c.pending))
	for _, tok := range c.pendingTokens() {
		out = append(out, *c.pending[tok])
	}
	return out
}

// checkLost asserts C12: a broker whose registration lost its storage is unfenced only
// once it is in no ISR, and no partition change elects it or keeps it in an ISR beside
// another member.
func (c *Controller) checkLost(r meta.Record) {
	switch r.Kind {
	case meta.KindBrokerChange:
		b, ok := c.image.Broker(r.NodeID)
		if !ok || !b.StorageLost || r.BrokerState != meta.BrokerUnfenced {
			return
		}
		for _, name := range c.image.TopicNames() {
			for p, s := range c.image.Topic(name).States {
				core.Invariant(!slices.Contains(s.ISR, r.NodeID), "C12", "unfencing broker "+
					"%d, whose storage was lost, while it is in the ISR of %s-%d %v",
					r.NodeID, name, p, s.ISR)
			}
		}
	case meta.KindPartitionChange:
		lost := Lost(c.image)
		core.Invariant(r.State.Leader == meta.NoLeader || !lost(r.State.Leader) ||
			r.Unclean, "C12", "electing broker %d, whose storage was lost, in %s-%d",
			r.State.Leader, r.Topic, r.Partition)
	}
}

// propose sends p's record to the metadata log.
func (c *Controller) propose(p Pending) {
	core.Invariant(c.active, "C6", "proposal %v while not the active controller", p.Op)
	if p.Record.Kind == meta.KindPartitionChange {
		// The change is for the topic as the image knows it, not a later one of the name.
		if t := c.image.Topic(p.Record.Topic); t != nil {
			p.Record.TopicID = t.ID
		}
		cur, assigned, ok := c.image.Partition(p.Record.Topic, p.Record.Partition)
		core.Invariant(ok && assigned && p.Record.State.Check() == nil &&
			p.Record.State.PartitionEpoch == cur.PartitionEpoch+1, "C6",
			"%v proposes a malformed change of %s-%d: %+v after %+v", p.Op, p.Record.Topic,
			p.Record.Partition, p.Record.State, cur)
	}
	c.checkLost(p.Record)
	if p.Request != 0 {
		c.park(p.Request)
	}
	c.token++
	p.Token, p.LeaderEpoch = c.token, c.epoch
	c.pending[p.Token] = &p
	c.busy[p.Key]++
	c.env.Propose(p.Record, p.Token)
}

func (c *Controller) metaAnswer(in MetaAnswer) {
	p, ok := c.pending[in.Token]
	if !ok {
		return // proposed by an earlier activation: its record, if committed, was checked
	}
	delete(c.pending, in.Token)
	if c.busy[p.Key]--; c.busy[p.Key] == 0 {
		delete(c.busy, p.Key)
	}
	c.dirty = true
	code := int16(0)
	switch in.Outcome {
	case Committed:
		core.Invariant(in.Index != 0 && in.Index <= c.applied, "C5",
			"proposal %d committed at %d before it was applied (applied %d)", in.Token,
			in.Index, c.applied)
		if err, refused := c.notApplied[in.Index]; refused {
			delete(c.notApplied, in.Index)
			c.lg.Info("controller record committed but overtaken", zap.Stringer("op", p.Op),
				zap.Error(err))
			code = conflictCode(p.Op)
		}
	case NotLeader:
		c.answerPending(p, codeNotController)
		// A proposal of an earlier leader epoch says only that that term is over: this
		// node was announced leader again since, and acts on.
		if p.LeaderEpoch == c.epoch {
			c.deactivate(fmt.Sprintf("the metadata log says another node leads (hint %d)",
				in.Leader))
		}
		return
	case Rejected:
		c.lg.Warn("controller record rejected", zap.Stringer("op", p.Op))
		c.arm(&c.retry, timerRetry, c.now.AddMillis(c.cfg.RetryBackoffMs))
		code = codeRetriable
	case Unknown:
		// It may commit later: the image will say. Its key is free again, so the
		// decision is taken again from the image; the records are conditional, so at
		// most one of the two changes it.
		c.lg.Info("controller record outcome unknown", zap.Stringer("op", p.Op))
		code = codeRetriable
	default:
		core.Invariant(false, "C5", "proposal %d: unknown outcome %d", in.Token, in.Outcome)
	}
	c.answerPending(p, code)
}

// conflictCode is a request's answer when its record committed but did not apply.
func conflictCode(op Op) int16 {
	switch op {
	case OpAlterPartition:
		return codeInvalidUpdateVersion
	case OpCreateTopic:
		return codeTopicExists
	default:
		return codeRetriable
	}
}

// sortTPs sorts partitions by topic, then number.
func sortTPs(tps []core.TopicPartition) {
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
}
