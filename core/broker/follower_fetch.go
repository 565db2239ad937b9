package broker

// The leader's side of a follower's Fetch (issue 8: replication).
//
// A Fetch whose ReplicaID (v0–14; ReplicaState.ID from v15) is a node id, on a
// partition of an assigned topic, comes from a follower. Per partition, as Kafka's
// Partition.fetchRecords does for a follower:
//   - the partition must be hosted and led here, CurrentLeaderEpoch checked as for a
//     consumer (leader.go); the fetching node must be one of the partition's replicas,
//     else NOT_LEADER_OR_FOLLOWER;
//   - the position is checked against the leader's log (replica.CheckFollowerFetch):
//     FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, a diverging tail (v12+ DivergingEpoch:
//     no records, the follower truncates first), OFFSET_OUT_OF_RANGE;
//   - the fetch is recorded (replica.FollowerFetched): the fetch offset is what the
//     follower holds durably, so the high-water mark may advance, which answers the
//     acks=all produces and consumer fetches waiting for it (hwmAdvanced); a follower
//     outside the ISR that caught up is proposed for it (isr_changes.go);
//   - records are read from the fetch offset up to the log end, not the high-water
//     mark (replica.ReadForFollower), at most replica.fetch.response.max.bytes;
//   - the answer carries the high-water mark and the log start offset.
//
// A follower fetch that finds no data parks like a consumer's long poll and is woken
// when the log grows (an append, not its fsync: followers replicate what is not yet
// durable on the leader). Unassigned partitions are served as before (a consumer read).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/replica"
)

// fetchReplicaID is the node id a Fetch comes from, or negative for a consumer.
func fetchReplicaID(m *kmsg.FetchRequest) int32 {
	if m.Version >= 15 {
		return m.ReplicaState.ID
	}
	return m.ReplicaID
}

// isFollowerFetch says whether m is a follower's fetch of assigned partitions.
func (rm *replicaManager) isFollowerFetch(m *kmsg.FetchRequest) bool {
	if fetchReplicaID(m) < 0 {
		return false
	}
	for _, t := range m.Topics {
		if tp := rm.image.Topic(t.Topic); tp != nil && tp.States != nil {
			return true
		}
	}
	return false
}

// readFollowerPartition answers one partition of a follower's fetch; record says
// whether the fetch is recorded (its first read, not the re-read of a parked fetch).
func (rm *replicaManager) readFollowerPartition(m *kmsg.FetchRequest, topic string,
	p *kmsg.FetchRequestTopicPartition, budget int, strict, record bool,
) kmsg.FetchResponseTopicPartition {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition = p.Partition
	rp.RecordBatches = []byte{}
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
	tp := core.TopicPartition{Topic: topic, Partition: p.Partition}
	id := fetchReplicaID(m)
	rep, code := rm.replicaFor(tp)
	if code == 0 {
		code = rm.checkLeader(tp, p.CurrentLeaderEpoch)
	}
	s, _ := rm.assignedState(tp)
	if code == 0 && (!slices.Contains(s.Replicas, id) || id == rm.cfg.NodeID) {
		rm.hit(pNotLeader)
		code = kerr.NotLeaderForPartition.Code // not a replica of the partition
	}
	if code != 0 {
		rp.ErrorCode = code
		return rp
	}
	f := replica.FollowerFetch{Replica: id, FetchOffset: p.FetchOffset, LastFetchedEpoch: -1,
		CurrentLeaderEpoch: p.CurrentLeaderEpoch, NowMs: rm.now.Millis()}
	if m.Version >= 12 {
		f.LastFetchedEpoch = p.LastFetchedEpoch
	}
	f.LogStartOffset = -1
	if m.Version >= 5 {
		f.LogStartOffset = p.LogStartOffset
	}
	chk := rep.CheckFollowerFetch(f)
	rp.HighWatermark, rp.LastStableOffset = rep.HighWatermark(), rep.HighWatermark()
	rp.LogStartOffset = rep.StartOffset()
	switch {
	case chk.Code != 0:
		rp.ErrorCode = chk.Code
		return rp
	case chk.Diverging:
		rm.hit(pFollowerDiverging)
		rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = chk.DivergingEpoch,
			chk.DivergingEndOffset
		return rp
	}
	if record {
		rm.hit(pFollowerFetch)
		rm.noteHeld(tp, id, min(p.FetchOffset, rep.EndOffset()))
		if rep.FollowerFetched(f) {
			rm.hwmAdvanced(tp)
		}
		rm.deletesAdvanced(tp)
		rm.maybeExpand(tp, rep, s, id)
	}
	limit := max(min(int(p.PartitionMaxBytes), budget), 0)
	if !strict {
		limit = max(limit, 1)
	}
	res := rep.ReadForFollower(p.FetchOffset, limit)
	rp.ErrorCode = res.Err
	rp.HighWatermark, rp.LastStableOffset = res.HighWatermark, res.HighWatermark
	rp.LogStartOffset = res.StartOffset
	if res.Records != nil && (!strict || len(res.Records) <= limit) {
		rp.RecordBatches = res.Records
	}
	return rp
}

// followerDataArrived wakes the follower fetches parked on tp now that its log grew.
func (rm *replicaManager) followerDataArrived(tp core.TopicPartition) {
	for _, w := range rm.fetches.byTP[tp] {
		if w.follower {
			rm.fetchDataArrived(tp)
			return
		}
	}
}

// followerHasEnough says whether a parked follower fetch has something new: a log that
// grew past where it ended at parking, or a partition gone.
func (rm *replicaManager) followerHasEnough(w *fetchWait) bool {
	for i, tp := range w.tps {
		rep := rm.replicas[tp]
		if rep == nil || rep.EndOffset() > w.startEnd[i] || rep.Follower() {
			return true
		}
	}
	return false
}
