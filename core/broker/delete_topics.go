package broker

// DeleteTopics (key 20), versions 0–6.
//
// Topics are named (TopicNames up to v5; Topics[].Topic from v6) or, from v6, given by
// topic ID when the name is null. Unknown names get UNKNOWN_TOPIC_OR_PARTITION, unknown
// IDs UNKNOWN_TOPIC_ID. Each existing topic gets one TopicDeleted record; a topic named
// twice is deleted once and both entries share the outcome. The reply waits for every
// commit; the topic's partitions are closed and their logs removed as the record applies.
// Every group's committed offsets of the deleted partitions are then removed, as Kafka
// removes them, with tombstones in __consumer_offsets; the reply also waits for those
// to be durable (groups_topics.go).
// Answers are in request order; v6 answers carry the topic ID, v5+ an error message.
// With a metadata quorum, a node that is not the active controller answers every topic
// NOT_CONTROLLER (clients retry on the controller Metadata names); the controller's node
// proposes the deletions itself, as the records need no placement.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

func (ctl *adminController) handleDeleteTopics(r Request, m *kmsg.DeleteTopicsRequest) {
	ctl.serialize(&opDeleteTopics{adminBase: adminBase{req: r}, m: m})
}

// deleteTargets lists the request's entries in one shape for both version families.
func deleteTargets(m *kmsg.DeleteTopicsRequest) []kmsg.DeleteTopicsRequestTopic {
	if m.Version >= 6 {
		return m.Topics
	}
	out := make([]kmsg.DeleteTopicsRequestTopic, len(m.TopicNames))
	for i := range m.TopicNames {
		out[i].Topic = &m.TopicNames[i]
	}
	return out
}

func (ctl *adminController) deleteTopics(op *opDeleteTopics) {
	m := op.m
	resp := m.ResponseKind().(*kmsg.DeleteTopicsResponse)
	if ctl.notController() {
		for _, t := range deleteTargets(m) {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, kerr.NotController.Code
			rt.ErrorMessage = strp("This node is not the active controller.")
			resp.Topics = append(resp.Topics, rt)
		}
		ctl.reply(op.req, resp)
		ctl.adminFinished(op)
		return
	}
	var recs []meta.Record
	recOf := map[string]int{} // topic → index in recs
	var waits []int           // per response entry: index in recs, or -1
	for _, t := range deleteTargets(m) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		topic, code, msg := ctl.deletionTarget(t)
		if code == 0 && isInternalTopic(topic.Name) {
			code, msg = kerr.InvalidTopicException.Code, "Cannot delete internal topic "+topic.Name
		}
		waits = append(waits, -1)
		if code != 0 {
			rt.ErrorCode, rt.ErrorMessage = code, strp(msg)
		} else {
			rt.Topic, rt.TopicID = strp(topic.Name), topic.ID
			i, ok := recOf[topic.Name]
			if !ok {
				i = len(recs)
				recOf[topic.Name] = i
				recs = append(recs, meta.Record{Kind: meta.KindTopicDeleted, Topic: topic.Name})
			}
			waits[len(waits)-1] = i
		}
		resp.Topics = append(resp.Topics, rt)
	}
	op.resp, op.waits = resp, waits
	ctl.proposeAll(op, recs) // then deleteTopicsCommitted
}

// deleteTopicsCommitted tombstones the deleted topics' committed offsets, then
// answers (adminOffsetsWritten).
func (ctl *adminController) deleteTopicsCommitted(op *opDeleteTopics) {
	resp, errs := op.resp, op.errs
	for i, w := range op.waits {
		if w >= 0 && errs[w] != nil {
			code, msg := commitFailure(errs[w])
			resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = code, strp(msg)
		}
	}
	deleted := map[string]bool{}
	for i, rec := range op.recs {
		if errs[i] == nil {
			deleted[rec.Topic] = true
		}
	}
	ctl.tombstoneTopicOffsets(op, "topic deleted", deleted)
}

// deletionTarget resolves one entry to an existing topic.
func (ctl *adminController) deletionTarget(t kmsg.DeleteTopicsRequestTopic) (*meta.Topic, int16,
	string) {
	if t.Topic != nil {
		if topic := ctl.image.Topic(*t.Topic); topic != nil {
			return topic, 0, ""
		}
		return nil, kerr.UnknownTopicOrPartition.Code,
			fmt.Sprintf("Topic '%s' does not exist.", *t.Topic)
	}
	if topic := ctl.image.TopicByID(t.TopicID); topic != nil && t.TopicID != [16]byte{} {
		return topic, 0, ""
	}
	return nil, kerr.UnknownTopicID.Code, "No topic has this topic ID."
}
