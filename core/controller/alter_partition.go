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
// One exception is Sluice's own: a new ISR without the leader is the leader resigning,
// its log offline (decideResign). electable says which brokers may be elected then.
//
// It returns the record to propose (change true), or none when the ISR is already that
// set, with the answer's code (0: success) and why, for the log.
func DecideAlterPartition(im *meta.Image, req AlterPartition, electable func(int32) bool) (
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
	if !slices.Contains(req.NewISR, req.NodeID) {
		return decideResign(im, req, s, electable)
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

// decideResign decides an AlterPartition whose new ISR leaves the leader out: the
// leader's log went offline and it hands the partition to the rest of its ISR
// (core/broker resign.go). The new ISR must be a non-empty part of the current one
// (INVALID_REQUEST otherwise); the new leader is its first member in replica order that
// electable allows (eligible, and heard from by this controller), in a new leader
// epoch. With none, INELIGIBLE_REPLICA: the leader asks again later. The resigning
// leader leaves the ISR: it can append nothing until it restarts, and it rejoins as any
// follower does, once caught up.
func decideResign(im *meta.Image, req AlterPartition, s meta.PartitionState,
	electable func(int32) bool) (rec meta.Record, change bool, code int16, why string) {
	next := s.Clone()
	next.ISR = slices.Clone(req.NewISR)
	if len(next.ISR) == 0 || !subsetOf(next.ISR, s.ISR) {
		return rec, false, codeInvalidRequest, fmt.Sprintf("a resignation's ISR %v must "+
			"be a non-empty part of the ISR %v", req.NewISR, s.ISR)
	}
	next.Leader = meta.NoLeader
	for _, r := range s.Replicas {
		if slices.Contains(next.ISR, r) && electable(r) {
			next.Leader = r
			break
		}
	}
	if next.Leader == meta.NoLeader {
		return rec, false, codeIneligibleReplica, fmt.Sprintf("no member of %v may lead",
			req.NewISR)
	}
	if err := next.Check(); err != nil {
		return rec, false, codeInvalidRequest, err.Error()
	}
	next = bump(s, next)
	return meta.Record{Kind: meta.KindPartitionChange, Topic: req.Topic,
		TopicID: im.Topic(req.Topic).ID, Partition: req.Partition, State: next}, true, 0, ""
}

// subsetOf says whether every element of a is in b (a without duplicates).
func subsetOf(a, b []int32) bool {
	for i, x := range a {
		if !slices.Contains(b, x) || slices.Contains(a[i+1:], x) {
			return false
		}
	}
	return true
}
