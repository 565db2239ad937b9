package controller

import (
	"fmt"
	"slices"

	"github.com/sluicemq/sluice/core/meta"
)

// DecideAlterPartition decides an ISR change asked by a partition's leader, with
// Kafka's checks and codes (ReplicationControlManager.validateAlterPartitionData):
//   - the broker must be registered with that epoch (BROKER_ID_NOT_REGISTERED,
//     STALE_BROKER_EPOCH);
//   - the partition must exist and be assigned (UNKNOWN_TOPIC_OR_PARTITION);
//   - epochs newer than the image's mean this controller is behind: NOT_CONTROLLER;
//   - an older leader epoch: FENCED_LEADER_EPOCH; a broker that is not the leader:
//     INVALID_REQUEST; an older partition epoch: INVALID_UPDATE_VERSION;
//   - the new ISR must be distinct replicas including the leader (INVALID_REQUEST) and
//     every member registered and unfenced, not shutting down (INELIGIBLE_REPLICA).
//
// It returns the record to propose (change true), or none when the ISR is already that
// set, with the answer's code (0: success) and why, for the log.
func DecideAlterPartition(im *meta.Image, req AlterPartition) (
	rec meta.Record, change bool, code int16, why string) {
	if c := checkBroker(im, req.NodeID, req.BrokerEpoch); c != 0 {
		return rec, false, c, fmt.Sprintf("broker %d epoch %d", req.NodeID, req.BrokerEpoch)
	}
	s, assigned, ok := im.Partition(req.Topic, req.Partition)
	if !ok || !assigned {
		return rec, false, codeUnknownTopicPartition, "no such assigned partition"
	}
	switch {
	case req.LeaderEpoch > s.LeaderEpoch || req.PartitionEpoch > s.PartitionEpoch:
		return rec, false, codeNotController, fmt.Sprintf("epochs %d/%d are newer than "+
			"%d/%d", req.LeaderEpoch, req.PartitionEpoch, s.LeaderEpoch, s.PartitionEpoch)
	case req.LeaderEpoch < s.LeaderEpoch:
		return rec, false, codeFencedLeaderEpoch, fmt.Sprintf("leader epoch %d < %d",
			req.LeaderEpoch, s.LeaderEpoch)
	case req.NodeID != s.Leader:
		return rec, false, codeInvalidRequest, fmt.Sprintf("the leader is %d", s.Leader)
	case req.PartitionEpoch < s.PartitionEpoch:
		return rec, false, codeInvalidUpdateVersion, fmt.Sprintf("partition epoch %d < %d",
			req.PartitionEpoch, s.PartitionEpoch)
	}
	next := s.Clone()
	next.ISR = slices.Clone(req.NewISR)
	if err := next.Check(); err != nil {
		return rec, false, codeInvalidRequest, err.Error()
	}
	eligible := Eligible(im)
	for _, id := range next.ISR {
		if !eligible(id) {
			return rec, false, codeIneligibleReplica, fmt.Sprintf("replica %d is not live", id)
		}
	}
	if sameSet(next.ISR, s.ISR) {
		return rec, false, 0, ""
	}
	next = bump(s, next)
	return meta.Record{Kind: meta.KindPartitionChange, Topic: req.Topic,
		TopicID: im.Topic(req.Topic).ID, Partition: req.Partition, State: next}, true, 0, ""
}

func sameSet(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
