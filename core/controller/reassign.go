package controller

// Partition reassignment, the actor's side (Kafka's AlterPartitionReassignments and
// ListPartitionReassignments, KIP-455): a request proposes, per partition, the
// PartitionChange that starts (or cancels, or replaces) a reassignment, and is answered
// once every proposal is; the reconciler completes each reassignment in progress once
// its adding replicas joined the ISR (reassign_decide.go).

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// The reassignment operations (after the ones in pending.go, numbered apart so that
// either list can grow).
const (
	OpReassign         Op = 64 + iota // PartitionChange starting or cancelling a reassignment
	OpReassignComplete                // PartitionChange completing a reassignment
)

// extraOpName names the operations defined outside pending.go.
func extraOpName(o Op) string {
	switch o {
	case OpReassign:
		return "reassign"
	case OpReassignComplete:
		return "reassign-complete"
	case OpUnregister:
		return "unregister"
	}
	return "op(?)"
}

var codeNoReassignment = kerr.NoReassignmentInProgress.Code

// Reassignment is one partition of an AlterReassignments request: its target replicas,
// or Cancel (Kafka's null replica list) to revert the reassignment in progress.
type Reassignment struct {
	TP       core.TopicPartition
	Replicas []int32
	Cancel   bool
}

// AlterReassignments starts, replaces or cancels partition reassignments (Kafka's
// AlterPartitionReassignments); answered once each partition's change is answered.
type AlterReassignments struct {
	Partitions []Reassignment
}

// ReassignResult is one partition's outcome.
type ReassignResult struct {
	TP      core.TopicPartition
	Err     int16
	Message string
}

// AlterReassignmentsResponse lists each partition's outcome, in request order.
type AlterReassignmentsResponse struct {
	Err     int16
	Results []ReassignResult
}

func (AlterReassignments) isMessage() {}

// ErrCode is the request's error (NOT_CONTROLLER), not a partition's.
func (r AlterReassignmentsResponse) ErrCode() int16 { return r.Err }

// reassignWait is an AlterReassignments request waiting for its proposals: queue holds
// the partitions (by their place in the request) not proposed yet, decided when there
// is room for their proposal (MaxInFlight), so one request of many partitions is
// proposed in bounded steps, like Repair's changes.
type reassignWait struct {
	err         int16
	items       []Reassignment
	queue       []int
	results     []ReassignResult
	outstanding int
}

// alterReassignments checks the request as a whole and queues its partitions; they are
// decided and proposed in request order as room allows (drainReassigns).
func (c *Controller) alterReassignments(id uint64, m AlterReassignments) {
	w := &reassignWait{items: m.Partitions,
		results: make([]ReassignResult, len(m.Partitions))}
	seen := map[core.TopicPartition]int{}
	for _, r := range m.Partitions {
		seen[r.TP]++
	}
	for i, r := range m.Partitions {
		w.results[i].TP = r.TP
		if seen[r.TP] > 1 {
			w.results[i].Err, w.results[i].Message = codeInvalidRequest,
				"The partition is named more than once in the request."
			continue
		}
		w.queue = append(w.queue, i)
	}
	c.park(id)
	if c.reassigns == nil {
		c.reassigns = map[uint64]*reassignWait{}
	}
	c.reassigns[id] = w
	c.drainReassigns()
}

// drainReassigns decides and proposes queued reassignments, oldest request first,
// while there is room, and answers the requests that are done.
func (c *Controller) drainReassigns() {
	if len(c.reassigns) == 0 {
		return
	}
	eligible := Eligible(c.image)
	for _, id := range sortedKeys(c.reassigns) {
		w := c.reassigns[id]
		for len(w.queue) > 0 && c.roomForMore() {
			i := w.queue[0]
			w.queue = w.queue[1:]
			rec, code, msg := c.decideReassignment(w.items[i], eligible)
			w.results[i].Err, w.results[i].Message = code, msg
			if code == 0 && rec.Kind != 0 {
				w.outstanding++
				c.propose(Pending{Op: OpReassign, Key: partitionKey(rec.Topic, rec.Partition),
					Reassign: id, ReassignAt: i, Record: rec})
			}
		}
		if len(w.queue) == 0 && w.outstanding == 0 {
			delete(c.reassigns, id)
			c.answerParked(id, AlterReassignmentsResponse{Err: w.err, Results: w.results})
		}
	}
}

// decideReassignment checks one partition's reassignment and returns its record (Kind
// 0: nothing to change).
func (c *Controller) decideReassignment(r Reassignment, eligible func(int32) bool) (
	meta.Record, int16, string) {
	s, assigned, ok := c.image.Partition(r.TP.Topic, r.TP.Partition)
	if !ok || !assigned {
		return meta.Record{}, codeUnknownTopicPartition, fmt.Sprintf(
			"Partition %s does not exist or has no replica placement.", r.TP)
	}
	if !r.Cancel {
		if code, msg := CheckTarget(r.Replicas, eligible); code != 0 {
			return meta.Record{}, code, msg
		}
	}
	next, changed, code, msg := Reassign(s, r.Replicas, r.Cancel, eligible)
	if code != 0 || !changed {
		return meta.Record{}, code, msg
	}
	c.lg.Info("partition reassignment", zap.Stringer("tp", r.TP), zap.Bool("cancel", r.Cancel),
		zap.Int32s("replicas", s.Replicas), zap.Int32s("target", r.Replicas),
		zap.Int32s("next_replicas", next.Replicas), zap.Int32s("adding", next.Adding),
		zap.Int32s("removing", next.Removing))
	return meta.Record{Kind: meta.KindPartitionChange, Topic: r.TP.Topic,
		Partition: r.TP.Partition, State: next}, 0, ""
}

// reassignAnswered notes one proposal's outcome; the request is answered after its
// last (drainReassigns, which the reconciler runs after this step).
func (c *Controller) reassignAnswered(p *Pending, code int16) {
	w, ok := c.reassigns[p.Reassign]
	if !ok {
		return
	}
	if code != 0 {
		w.results[p.ReassignAt].Err = code
		w.results[p.ReassignAt].Message = "The reassignment did not commit; retry."
	}
	if code == codeNotController {
		w.err = code // the whole request goes to the next controller
	}
	w.outstanding--
}

// dropReassignWaits answers every waiting AlterReassignments NOT_CONTROLLER (the
// controller stops being active).
func (c *Controller) dropReassignWaits() {
	for _, id := range sortedKeys(c.reassigns) {
		c.answerParked(id, AlterReassignmentsResponse{Err: codeNotController})
	}
	c.reassigns = nil
}

// completeReassignments proposes the completion of every reassignment whose adding
// replicas all joined the ISR, bounded like Repair (one proposal per partition, at most
// MaxInFlight in all).
func (c *Controller) completeReassignments() {
	eligible := c.electable()
	for _, name := range c.image.TopicNames() {
		for p, s := range c.image.Topic(name).States {
			if !Reassigning(s) {
				continue
			}
			k := partitionKey(name, int32(p))
			if c.isBusy(k) {
				continue
			}
			next, ok := CompleteReassignment(s, eligible)
			if !ok {
				continue
			}
			if !c.roomForMore() {
				c.dirty = true // the rest when answers free room
				return
			}
			c.lg.Info("partition reassignment complete", zap.String("topic", name),
				zap.Int("partition", p), zap.Int32s("replicas", next.Replicas),
				zap.Int32s("isr", next.ISR), zap.Int32("leader", next.Leader),
				zap.Int32s("removed", s.Removing))
			c.propose(Pending{Op: OpReassignComplete, Key: k, Record: meta.Record{
				Kind: meta.KindPartitionChange, Topic: name, Partition: int32(p),
				State: next}})
		}
	}
}

// Reassignments lists the partitions with a reassignment in progress, sorted, with
// their states (Kafka's ListPartitionReassignments: replicas, adding, removing).
// Empty tps means every partition.
func Reassignments(im *meta.Image, tps []core.TopicPartition) (
	[]core.TopicPartition, []meta.PartitionState) {
	var outTP []core.TopicPartition
	var outS []meta.PartitionState
	add := func(tp core.TopicPartition) {
		if s, assigned, ok := im.Partition(tp.Topic, tp.Partition); ok && assigned &&
			Reassigning(s) {
			outTP, outS = append(outTP, tp), append(outS, s)
		}
	}
	if len(tps) == 0 {
		for _, name := range im.TopicNames() {
			for p := range im.Topic(name).States {
				add(core.TopicPartition{Topic: name, Partition: int32(p)})
			}
		}
		return outTP, outS
	}
	tps = slices.Clone(tps)
	sortTPs(tps)
	for _, tp := range slices.Compact(tps) {
		add(tp)
	}
	return outTP, outS
}
