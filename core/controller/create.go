package controller

// Topic creation and growth: the broker that took a CreateTopics or CreatePartitions
// request validated names, counts, configs and its own limits; the controller places
// the new partitions (or checks a manual assignment) against the brokers it sees live
// and proposes the record that creates them with their partition states.

import (
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/meta"
)

func (c *Controller) createTopic(id uint64, m CreateTopic) {
	if c.image.Topic(m.Name) != nil {
		c.env.Answer(id, CreateTopicResponse{Err: codeTopicExists,
			Message: fmt.Sprintf("Topic '%s' already exists.", m.Name)})
		return
	}
	var states []meta.PartitionState
	if len(m.Assignment) > 0 {
		var code int16
		var msg string
		states, code, msg = CheckAssignment(c.image, m.Assignment, 0)
		if code != 0 {
			c.refuseCreation(id, m.Name, CreateTopicResponse{Err: code, Message: msg})
			return
		}
		m.Partitions, m.ReplicationFactor = int32(len(states)), int16(len(states[0].Replicas))
	} else {
		assign, code, msg := Place(EligibleBrokers(c.image), m.Partitions,
			m.ReplicationFactor, c.rnd)
		if code != 0 {
			c.refuseCreation(id, m.Name, CreateTopicResponse{Err: code, Message: msg})
			return
		}
		states = NewPartitionStates(assign)
	}
	c.propose(Pending{Op: OpCreateTopic, Key: Key{Node: -1, Topic: m.Name, Partition: -1},
		Request: id, Record: meta.Record{Kind: meta.KindTopicCreated, Topic: m.Name,
			TopicID: m.TopicID, Partitions: m.Partitions,
			ReplicationFactor: m.ReplicationFactor, Configs: m.Configs,
			PartitionStates: states}})
}

// createPartitions places a topic's new partitions with the topic's replication factor
// (or checks the manual assignment) and proposes PartitionsAdded. A topic created
// before placement existed (unassigned) grows unassigned, as before.
func (c *Controller) createPartitions(id uint64, m CreatePartitions) {
	t := c.image.Topic(m.Topic)
	if t == nil || (m.TopicID != [16]byte{} && m.TopicID != t.ID) {
		c.env.Answer(id, CreatePartitionsResponse{Err: codeUnknownTopicPartition,
			Message: fmt.Sprintf("Topic '%s' does not exist.", m.Topic)})
		return
	}
	if m.Count <= t.Partitions {
		c.env.Answer(id, CreatePartitionsResponse{Err: codeInvalidPartitions,
			Message: fmt.Sprintf("Topic currently has %d partitions, which is not fewer "+
				"than the requested %d.", t.Partitions, m.Count)})
		return
	}
	added := m.Count - t.Partitions
	var states []meta.PartitionState
	switch {
	case t.States == nil:
		// Unassigned: it lives on every node that hosts it, and so do its new partitions.
	case len(m.Assignment) > 0:
		if int32(len(m.Assignment)) != added {
			c.refuseCreation(id, m.Topic, CreatePartitionsResponse{
				Err: codeInvalidReplicaAssignment, Message: fmt.Sprintf("Increasing the "+
					"number of partitions by %d but %d assignments provided.", added,
					len(m.Assignment))})
			return
		}
		var code int16
		var msg string
		states, code, msg = CheckAssignment(c.image, m.Assignment, len(t.States[0].Replicas))
		if code != 0 {
			c.refuseCreation(id, m.Topic, CreatePartitionsResponse{Err: code, Message: msg})
			return
		}
	default:
		assign, code, msg := Place(EligibleBrokers(c.image), added,
			int16(len(t.States[0].Replicas)), c.rnd)
		if code != 0 {
			c.refuseCreation(id, m.Topic, CreatePartitionsResponse{Err: code, Message: msg})
			return
		}
		states = NewPartitionStates(assign)
	}
	c.propose(Pending{Op: OpCreatePartitions, Key: Key{Node: -1, Topic: m.Topic,
		Partition: -1}, Request: id, Record: meta.Record{Kind: meta.KindPartitionsAdded,
		Topic: m.Topic, TopicID: t.ID, Partitions: m.Count, PartitionStates: states}})
}

// refuseCreation answers a creation the controller cannot place, and logs why.
func (c *Controller) refuseCreation(id uint64, topic string, resp Response) {
	msg := ""
	switch r := resp.(type) {
	case CreateTopicResponse:
		msg = r.Message
	case CreatePartitionsResponse:
		msg = r.Message
	}
	c.lg.Info("topic creation refused", zap.String("topic", topic),
		zap.Int16("code", resp.ErrCode()), zap.String("why", msg))
	c.env.Answer(id, resp)
}

// CheckAssignment checks a manual replica assignment (Kafka's rules for CreateTopics
// and CreatePartitions): every partition lists at least one replica, no broker twice,
// only registered brokers, and every partition as many replicas as the first (or as
// rf, the topic's replication factor, when above 0). Each partition's ISR is its
// replicas that are eligible (registered and unfenced), in the given order, and the
// first of them leads; a partition none of whose replicas is eligible is refused, as it
// could not be led. Failures are INVALID_REPLICA_ASSIGNMENT with Kafka's wording.
func CheckAssignment(im *meta.Image, assignment [][]int32, rf int) (
	[]meta.PartitionState, int16, string) {
	eligible := Eligible(im)
	out := make([]meta.PartitionState, len(assignment))
	for p, replicas := range assignment {
		if len(replicas) == 0 {
			return nil, codeInvalidReplicaAssignment, fmt.Sprintf("The manual partition "+
				"assignment includes an empty replica list (partition %d).", p)
		}
		if rf <= 0 {
			rf = len(replicas)
		}
		if len(replicas) != rf {
			return nil, codeInvalidReplicaAssignment, fmt.Sprintf("The manual partition "+
				"assignment includes a partition with %d replica(s), but this is not "+
				"consistent with the other partitions, which have %d replica(s).",
				len(replicas), rf)
		}
		var isr []int32
		for i, r := range replicas {
			if slices.Contains(replicas[:i], r) {
				return nil, codeInvalidReplicaAssignment, fmt.Sprintf("The manual "+
					"partition assignment includes broker %d more than once "+
					"(partition %d).", r, p)
			}
			if _, ok := im.Broker(r); !ok {
				return nil, codeInvalidReplicaAssignment, fmt.Sprintf("The manual "+
					"partition assignment includes broker %d, but no such broker is "+
					"registered (partition %d).", r, p)
			}
			if eligible(r) {
				isr = append(isr, r)
			}
		}
		if len(isr) == 0 {
			return nil, codeInvalidReplicaAssignment, fmt.Sprintf("All brokers specified "+
				"in the manual partition assignment for partition %d are fenced or in "+
				"controlled shutdown.", p)
		}
		out[p] = meta.PartitionState{Replicas: slices.Clone(replicas), ISR: isr,
			Leader: isr[0]}
	}
	return out, 0, ""
}
