package broker

import "github.com/sluicemq/sluice/core"

// Stubs for the follower fetcher, which another branch builds (core/broker/fetcher.go):
// the replica manager tells it which partitions to follow from which leader, and when
// to stop. This file is deleted when the two branches merge.

// follow starts (or moves) the fetching of tp from leader in leaderEpoch.
func (rm *replicaManager) follow(tp core.TopicPartition, leader, leaderEpoch int32) {}

// unfollow stops fetching tp.
func (rm *replicaManager) unfollow(tp core.TopicPartition) {}
