package broker

// CreatePartitions (key 37), versions 0–3.
//
// Grows topics; partitions are never removed. Per topic, answered in request order:
//   - named more than once in the request → INVALID_REQUEST for every occurrence;
//   - unknown topic → UNKNOWN_TOPIC_OR_PARTITION;
//   - Count not above the current count, or above 10000 → INVALID_PARTITIONS;
//   - an Assignment whose length is not the number of new partitions, or whose replicas
//     are not exactly [this node] → INVALID_REPLICA_ASSIGNMENT;
//   - the node would host more than sluice.max.partitions → POLICY_VIOLATION.
//
// With a metadata quorum (controller_port.go) a node that is not the active controller
// answers every topic NOT_CONTROLLER; on the controller's node the controller places the
// new partitions with the topic's replication factor (or checks the assignment: Kafka's
// rules, the topic's replica count) and proposes the record.
//
// Valid topics each get one PartitionsAdded record (the new total); the new partitions'
// logs are opened as it applies, a chunk per step (open_queue.go), and the reply waits
// for every commit and every log. ValidateOnly only
// checks. ErrorMessage is sent in every version.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

func (ctl *adminController) handleCreatePartitions(r Request, m *kmsg.CreatePartitionsRequest) {
	ctl.serialize(&opCreatePartitions{adminBase: adminBase{req: r}, m: m})
}

func (ctl *adminController) createPartitions(op *opCreatePartitions) {
	m := op.m
	resp := m.ResponseKind().(*kmsg.CreatePartitionsResponse)
	if ctl.notController() {
		for _, t := range m.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, kerr.NotController.Code
			rt.ErrorMessage = strp("This node is not the active controller.")
			resp.Topics = append(resp.Topics, rt)
		}
		ctl.reply(op.req, resp)
		ctl.adminFinished(op)
		return
	}
	counts := map[string]int{}
	for _, t := range m.Topics {
		counts[t.Topic]++
	}
	var recs []meta.Record
	var at []int
	var planned int64
	for i := range m.Topics {
		t := &m.Topics[i]
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		var code int16
		var msg string
		if counts[t.Topic] > 1 {
			code, msg = kerr.InvalidRequest.Code, fmt.Sprintf(
				"Create partitions request contains multiple entries for the topic %s", t.Topic)
		} else {
			code, msg = ctl.checkGrowth(t)
			if code == 0 {
				added := int64(t.Count - ctl.image.Topic(t.Topic).Partitions)
				if code, msg = ctl.hosts.partitionBudget(added, planned); code == 0 {
					planned += added
				}
			}
		}
		if code != 0 {
			rt.ErrorCode, rt.ErrorMessage = code, strp(msg)
		} else if !m.ValidateOnly {
			recs = append(recs, meta.Record{Kind: meta.KindPartitionsAdded, Topic: t.Topic,
				Partitions: t.Count})
			at = append(at, i)
			if ctl.ctlPort != nil {
				op.assign = append(op.assign, growthAssignment(t))
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	op.resp, op.at = resp, at
	ctl.proposeAll(op, recs) // then afterOpens, then createPartitionsOpened
}

// createPartitionsOpened answers once the records were answered and the new logs opened.
func (ctl *adminController) createPartitionsOpened(op *opCreatePartitions) {
	resp, recs, at := op.resp, op.recs, op.at
	for j, err := range op.errs {
		code, msg := int16(0), ""
		if err != nil {
			code, msg = commitFailure(err)
		} else {
			code, msg = ctl.hosts.unopened(recs[j].Topic, 0, recs[j].Partitions)
		}
		if code != 0 {
			resp.Topics[at[j]].ErrorCode, resp.Topics[at[j]].ErrorMessage = code, strp(msg)
		}
	}
	ctl.reply(op.req, resp)
	ctl.adminFinished(op)
}

// checkGrowth validates one topic's growth against the image.
func (ctl *adminController) checkGrowth(t *kmsg.CreatePartitionsRequestTopic) (int16, string) {
	topic := ctl.image.Topic(t.Topic)
	if topic == nil {
		return kerr.UnknownTopicOrPartition.Code,
			fmt.Sprintf("Topic '%s' does not exist.", t.Topic)
	}
	if isInternalTopic(topic.Name) { // its partition count maps groups to partitions
		return kerr.InvalidTopicException.Code, "Cannot add partitions to internal topic"
	}
	switch {
	case t.Count == topic.Partitions:
		return kerr.InvalidPartitions.Code,
			fmt.Sprintf("Topic already has %d partitions.", topic.Partitions)
	case t.Count < topic.Partitions:
		return kerr.InvalidPartitions.Code, fmt.Sprintf("Topic currently has %d partitions, "+
			"which is higher than the requested %d.", topic.Partitions, t.Count)
	}
	if code, msg := checkPartitionCount(t.Count); code != 0 {
		return code, msg
	}
	if t.Assignment == nil {
		return 0, ""
	}
	if added := t.Count - topic.Partitions; int32(len(t.Assignment)) != added {
		return kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("Increasing the number of "+
			"partitions by %d but %d assignments provided.", added, len(t.Assignment))
	}
	if ctl.ctlPort != nil {
		// The controller checks it again as it places (its image is this node's).
		rf := 0
		if len(topic.States) > 0 {
			rf = len(topic.States[0].Replicas)
		}
		_, code, msg := controller.CheckAssignment(ctl.image, growthAssignment(t), rf)
		return code, msg
	}
	for _, a := range t.Assignment {
		if p := ctl.checkReplicas(a.Replicas); p != "" {
			return kerr.InvalidReplicaAssignment.Code, p
		}
	}
	return 0, ""
}

// growthAssignment is a CreatePartitions topic's manual assignment, one replica list per
// new partition, or nil.
func growthAssignment(t *kmsg.CreatePartitionsRequestTopic) [][]int32 {
	var out [][]int32
	for _, a := range t.Assignment {
		out = append(out, a.Replicas)
	}
	return out
}
