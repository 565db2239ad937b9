package broker

// Helpers for the replication tests: assigned topics committed straight into a
// harness's metadata log (as the controller would), broker registrations, partition
// changes, and a follower's Fetch made by hand.

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// topicIDOf gives each test topic a fixed id.
func topicIDOf(name string) [16]byte {
	var id [16]byte
	copy(id[:], "id-"+name)
	return id
}

// pstate is a partition state: replicas, ISR, leader, leader epoch, partition epoch.
func pstate(replicas, isr []int32, leader, leaderEpoch, partitionEpoch int32) meta.PartitionState {
	return meta.PartitionState{Replicas: replicas, ISR: isr, Leader: leader,
		LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch}
}

func ids(xs ...int32) []int32 { return xs }

// assignedTopicRecord creates an assigned topic with one state per partition.
func assignedTopicRecord(name string, configs []meta.Config,
	states ...meta.PartitionState) meta.Record {
	return meta.Record{Kind: meta.KindTopicCreated, Topic: name, TopicID: topicIDOf(name),
		Partitions: int32(len(states)), ReplicationFactor: int16(len(states[0].Replicas)),
		Configs: configs, PartitionStates: states}
}

// registerRecords registers nodes and unfences them.
func registerRecords(nodes ...int32) []meta.Record {
	var out []meta.Record
	for i, n := range nodes {
		epoch := int64(100 + i)
		out = append(out,
			meta.Record{Kind: meta.KindBrokerRegistered, NodeID: n, BrokerEpoch: epoch,
				Host: "127.0.0.1", Port: 9090 + n},
			meta.Record{Kind: meta.KindBrokerChange, NodeID: n, BrokerEpoch: epoch,
				BrokerState: meta.BrokerUnfenced})
	}
	return out
}

// changeRecord is a PartitionChange of topic's partition p to s.
func changeRecord(topic string, p int32, s meta.PartitionState) meta.Record {
	return meta.Record{Kind: meta.KindPartitionChange, Topic: topic, TopicID: topicIDOf(topic),
		Partition: p, State: s}
}

// commitAll commits records into h's metadata log, applying each.
func (h *harness) commitAll(recs ...meta.Record) {
	h.t.Helper()
	for _, r := range recs {
		h.commitMeta(r)
	}
	h.settle()
}

// newNodeHarness starts node id (registered with peers in the image).
func newNodeHarness(t *testing.T, id int32, opts ...func(*Config)) *harness {
	return newHarness(t, append([]func(*Config){func(c *Config) { c.NodeID = id }}, opts...)...)
}

// followerFetch is a Fetch of one partition by follower node id.
func followerFetch(id int32, topic string, p int32, offset int64, lastEpoch,
	currentEpoch int32, waitMs int32) *kmsg.FetchRequest {
	req := fetchReq(topic, p, offset, waitMs, 1)
	req.ReplicaID = id
	req.Topics[0].Partitions[0].LastFetchedEpoch = lastEpoch
	req.Topics[0].Partitions[0].CurrentLeaderEpoch = currentEpoch
	return req
}

// fetchOne returns the one partition of a Fetch answer, whatever its error.
func fetchOne(t *testing.T, resp kmsg.Response) kmsg.FetchResponseTopicPartition {
	t.Helper()
	fr := resp.(*kmsg.FetchResponse)
	require.Len(t, fr.Topics, 1)
	require.Len(t, fr.Topics[0].Partitions, 1)
	return fr.Topics[0].Partitions[0]
}

// takePeer (fetcher_helpers_test.go) removes and returns the peer requests sent so far.

// alterRequest reads an AlterPartition request's one partition.
func alterRequest(t *testing.T, p PeerRequest) (string, kmsg.AlterPartitionRequestTopicPartition) {
	t.Helper()
	req, ok := p.Msg.(*kmsg.AlterPartitionRequest)
	require.True(t, ok, "peer request %T is not an AlterPartition", p.Msg)
	require.Len(t, req.Topics, 1)
	require.Len(t, req.Topics[0].Partitions, 1)
	return req.Topics[0].Topic, req.Topics[0].Partitions[0]
}

// alterResponse answers an AlterPartition for one partition with code and state s.
func alterResponse(topic string, p int32, code int16, s meta.PartitionState) *kmsg.AlterPartitionResponse {
	resp := kmsg.NewPtrAlterPartitionResponse()
	rt := kmsg.NewAlterPartitionResponseTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.LeaderID, rp.LeaderEpoch = p, code, s.Leader, s.LeaderEpoch
	rp.ISR, rp.PartitionEpoch = s.ISR, s.PartitionEpoch
	rt.Partitions = []kmsg.AlterPartitionResponseTopicPartition{rp}
	resp.Topics = []kmsg.AlterPartitionResponseTopic{rt}
	return resp
}

// epochReq is an OffsetForLeaderEpoch of one partition.
func epochReq(topic string, p, epoch, current int32) *kmsg.OffsetForLeaderEpochRequest {
	return epochEndReq(topic, p, current, epoch)
}

// listOffsetsReq lists one partition's offset at ts with CurrentLeaderEpoch current.
func listOffsetsReq(topic string, p int32, ts int64, current int32) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = maxVersion(kmsg.ListOffsets), -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, current
	rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
	req.Topics = []kmsg.ListOffsetsRequestTopic{rt}
	return req
}

// deleteRecordsReq deletes one partition's records before offset.
func deleteRecordsReq(topic string, p int32, offset int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version, req.TimeoutMillis = maxVersion(kmsg.DeleteRecords), 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{rp}
	req.Topics = []kmsg.DeleteRecordsRequestTopic{rt}
	return req
}
