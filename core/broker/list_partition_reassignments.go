package broker

// ListPartitionReassignments (key 46), version 0 (KIP-455).
//
// Lists the partitions whose reassignment is in progress, each with its replicas and
// the replicas being added and removed: all of them (Topics null) or those among the
// named partitions (a partition that does not exist or is not being moved is left out,
// as Kafka does). Clients send it to the controller: a quorum node that is not the
// active controller answers NOT_CONTROLLER. The controller's node answers from its
// image, which is the controller's (both apply the same log in the same step). A node
// without a metadata quorum moves nothing and lists nothing.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
)

func (n *node) handleListPartitionReassignments(
	m *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := m.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if n.notController() {
		resp.ErrorCode = kerr.NotController.Code
		resp.ErrorMessage = strp("This node is not the active controller.")
		return resp
	}
	var want []core.TopicPartition
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			want = append(want, core.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	if m.Topics != nil && len(want) == 0 {
		return resp // named no partition
	}
	tps, states := controller.Reassignments(n.image, want)
	for i, tp := range tps {
		if len(resp.Topics) == 0 || resp.Topics[len(resp.Topics)-1].Topic != tp.Topic {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = tp.Partition
		rp.Replicas = states[i].Replicas
		rp.AddingReplicas, rp.RemovingReplicas = states[i].Adding, states[i].Removing
		if rp.AddingReplicas == nil {
			rp.AddingReplicas = []int32{}
		}
		if rp.RemovingReplicas == nil {
			rp.RemovingReplicas = []int32{}
		}
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return resp
}
