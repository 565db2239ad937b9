package broker

// AlterPartitionReassignments (key 45), versions 0–1 (KIP-455; v1 adds
// AllowReplicationFactorChange, KIP-860).
//
// Moves partitions to new replicas: per partition a target replica list, or null to
// cancel the reassignment in progress. Clients send it to the controller Metadata names.
//   - A node without a metadata quorum has no replica placement to change: every
//     partition is answered INVALID_REPLICA_ASSIGNMENT (UNKNOWN_TOPIC_OR_PARTITION for
//     one that does not exist).
//   - A quorum node that is not the active controller answers NOT_CONTROLLER (top level
//     and per partition); clients refresh their metadata and retry there.
//   - v1 with AllowReplicationFactorChange false: a target whose length is not the
//     partition's replication factor is INVALID_REPLICATION_FACTOR.
//   - Otherwise the request goes to the controller (AlterReassignments,
//     core/controller/reassign.go), which checks each partition (UNKNOWN_TOPIC_OR_PARTITION,
//     INVALID_REPLICA_ASSIGNMENT for an empty list, a broker twice, a broker not
//     registered and unfenced; NO_REASSIGNMENT_IN_PROGRESS for a cancel with none;
//     INVALID_REQUEST for a partition named twice), proposes the changes and answers once
//     they committed. A change that did not commit is REQUEST_TIMED_OUT (retriable);
//     a controller that lost its leadership meanwhile, NOT_CONTROLLER.
//
// The answer means the reassignment started (or was cancelled): the new replicas catch
// up in the background and the controller completes the move once they are in the ISR
// (ListPartitionReassignments lists it until then).

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
)

// reassignAsk is an AlterPartitionReassignments waiting for the controller's answer.
type reassignAsk struct {
	req   Request
	resp  *kmsg.AlterPartitionAssignmentsResponse
	at    [][2]int // per asked partition, its topic and partition index in resp
	since core.Time
}

func (ctl *adminController) handleAlterPartitionReassignments(r Request,
	m *kmsg.AlterPartitionAssignmentsRequest) {
	resp := m.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = m.AllowReplicationFactorChange
	var msg controller.AlterReassignments
	var at [][2]int
	for ti, t := range m.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			tp := core.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if code, why := ctl.reassignLocally(m, tp, p.Replicas); code != 0 {
				rp.ErrorCode, rp.ErrorMessage = code, strp(why)
			} else {
				msg.Partitions = append(msg.Partitions, controller.Reassignment{TP: tp,
					Replicas: slices.Clone(p.Replicas), Cancel: p.Replicas == nil})
				at = append(at, [2]int{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if ctl.notController() {
		resp.ErrorCode = kerr.NotController.Code
		resp.ErrorMessage = strp("This node is not the active controller.")
	}
	if len(msg.Partitions) == 0 {
		ctl.reply(r, resp)
		return
	}
	id := ctl.token()
	if ctl.reassigns == nil {
		ctl.reassigns = map[uint64]reassignAsk{}
	}
	ctl.reassigns[id] = reassignAsk{req: r, resp: resp, at: at, since: ctl.now}
	ctl.lg.Info("partition reassignment asked", zap.Int("partitions", len(msg.Partitions)))
	ctl.ctlPort.AskController(ctl.leader, id, msg, controllerAskTimeoutMs)
}

// reassignLocally is what the broker answers for one partition without asking the
// controller (0: ask it).
func (ctl *adminController) reassignLocally(m *kmsg.AlterPartitionAssignmentsRequest,
	tp core.TopicPartition, target []int32) (int16, string) {
	s, assigned, ok := ctl.image.Partition(tp.Topic, tp.Partition)
	switch {
	case ctl.ctlPort == nil && !ok:
		return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Partition %s does not exist.",
			tp)
	case ctl.ctlPort == nil:
		return kerr.InvalidReplicaAssignment.Code, "This node runs without a metadata " +
			"quorum (--voters): its partitions have no replicas to move."
	case ctl.notController():
		return kerr.NotController.Code, "This node is not the active controller."
	case m.Version >= 1 && !m.AllowReplicationFactorChange && target != nil && ok &&
		assigned && len(target) != len(controller.StableReplicas(s)):
		return kerr.InvalidReplicationFactor.Code, fmt.Sprintf("The target %v changes the "+
			"replication factor of %s from %d, and AllowReplicationFactorChange is false.",
			target, tp, len(controller.StableReplicas(s)))
	}
	return 0, ""
}

// reassignAnswered takes the controller's answer to an AlterPartitionReassignments;
// false when in answers something else.
func (ctl *adminController) reassignAnswered(in ControllerAnswer) bool {
	w, ok := ctl.reassigns[in.ID]
	if !ok {
		return false
	}
	delete(ctl.reassigns, in.ID)
	r, _ := in.Resp.(controller.AlterReassignmentsResponse)
	all := int16(0)
	switch {
	case in.Err != nil && ctl.notController(), in.Err == nil && r.Err != 0:
		all = kerr.NotController.Code // the controller moved: the client retries there
	case in.Err != nil || len(r.Results) != len(w.at):
		all = kerr.RequestTimedOut.Code
		ctl.lg.Info("partition reassignment not answered by the controller", zap.Error(in.Err))
	}
	if all != 0 {
		w.resp.ErrorCode = all
		w.resp.ErrorMessage = strp(kerr.ErrorForCode(all).Error())
	}
	for i, at := range w.at {
		rp := &w.resp.Topics[at[0]].Partitions[at[1]]
		switch {
		case all != 0:
			rp.ErrorCode = all
		case r.Results[i].Err != 0:
			rp.ErrorCode, rp.ErrorMessage = r.Results[i].Err, strp(r.Results[i].Message)
		}
	}
	ctl.reply(w.req, w.resp)
	return true
}

// pendingReassigns lists the reassignment requests waiting for the controller.
func (ctl *adminController) pendingReassigns(out []PendingOp) []PendingOp {
	ids := make([]uint64, 0, len(ctl.reassigns))
	for id := range ctl.reassigns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		w := ctl.reassigns[id]
		out = append(out, PendingOp{Kind: PendingController, What: "partition reassignment",
			Since: w.since, Waits: fmt.Sprintf("controller answer id=%d", id),
			Conn: w.req.Conn, ID: w.req.ID, HasRequest: true})
	}
	return out
}
