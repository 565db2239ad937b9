package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// Node 1 hosts only the partitions whose replicas name it, leads those it leads and
// follows the others; clients get each partition's placement from Metadata.
func TestPlacementHostsOnlyThisNodesReplicas(t *testing.T) {
	h := newNodeHarness(t, 1)
	h.commitAll(registerRecords(1, 2, 3)...)
	h.commitAll(assignedTopicRecord("r", nil,
		pstate(ids(1, 2), ids(1, 2), 1, 3, 4), // led here
		pstate(ids(2, 1), ids(2, 1), 2, 5, 6), // followed here
		pstate(ids(2, 3), ids(2, 3), 3, 0, 0), // not here
	))
	require.True(t, h.hosted("r", 0))
	require.True(t, h.hosted("r", 1))
	require.False(t, h.hosted("r", 2))
	require.NotContains(t, h.env.logs, tp("r", 2), "no log for another node's partition")

	lead, follow := h.b.replicas[tp("r", 0)], h.b.replicas[tp("r", 1)]
	require.False(t, lead.Follower())
	require.Equal(t, int32(3), lead.LeaderEpoch())
	require.Equal(t, 2, lead.InSyncReplicas(), "the ISR comes from the image")
	require.True(t, follow.Follower())
	require.Equal(t, int32(5), follow.LeaderEpoch())

	md := h.do(&kmsg.MetadataRequest{Version: 12, Topics: []kmsg.MetadataRequestTopic{
		{Topic: strp("r")}}}).(*kmsg.MetadataResponse)
	require.Len(t, md.Brokers, 3)
	parts := md.Topics[0].Partitions
	require.Len(t, parts, 3)
	for i, want := range []struct {
		leader, epoch int32
		replicas      []int32
	}{{1, 3, ids(1, 2)}, {2, 5, ids(2, 1)}, {3, 0, ids(2, 3)}} {
		requireCode(t, nil, parts[i].ErrorCode)
		require.Equal(t, want.leader, parts[i].Leader, "partition %d", i)
		require.Equal(t, want.epoch, parts[i].LeaderEpoch, "partition %d", i)
		require.Equal(t, want.replicas, parts[i].Replicas, "partition %d", i)
		require.Equal(t, want.replicas, parts[i].ISR, "partition %d", i)
	}
}

// A PartitionChange that adds this node opens the log; one that moves it off removes
// the log as a deletion does; a leader change makes the leader a follower and back.
func TestPartitionChangeMovesReplicasAndRoles(t *testing.T) {
	h := newNodeHarness(t, 1)
	h.commitAll(registerRecords(1, 2, 3)...)
	h.commitAll(assignedTopicRecord("r", nil,
		pstate(ids(1, 2), ids(1, 2), 1, 0, 0),
		pstate(ids(2, 3), ids(2, 3), 2, 0, 0)))
	requireCode(t, nil, producePart(t, h.do(produceReq(1, "r", 0, values("a")))).ErrorCode)

	// Join partition 1, leave partition 0.
	h.commitAll(changeRecord("r", 1, pstate(ids(2, 3, 1), ids(2, 3), 2, 0, 1)))
	require.True(t, h.hosted("r", 1))
	require.True(t, h.b.replicas[tp("r", 1)].Follower())
	h.commitAll(changeRecord("r", 0, pstate(ids(2, 3), ids(2), 2, 1, 1)))
	require.False(t, h.hosted("r", 0))
	require.Contains(t, h.env.removed, tp("r", 0), "the moved-off replica's log is removed")

	// Leadership of partition 1 comes here, then goes again.
	h.commitAll(changeRecord("r", 1, pstate(ids(2, 3, 1), ids(2, 3, 1), 2, 0, 2)))
	h.commitAll(changeRecord("r", 1, pstate(ids(2, 3, 1), ids(2, 3, 1), 1, 1, 3)))
	rep := h.b.replicas[tp("r", 1)]
	require.False(t, rep.Follower())
	require.Equal(t, int32(1), rep.LeaderEpoch())
	h.commitAll(changeRecord("r", 1, pstate(ids(2, 3, 1), ids(2, 3, 1), 3, 2, 4)))
	require.True(t, rep.Follower())
	require.Equal(t, int32(2), rep.LeaderEpoch())

	// A restart replays the log into the same placement and roles.
	h.restart()
	require.False(t, h.hosted("r", 0))
	require.True(t, h.hosted("r", 1))
	require.True(t, h.b.replicas[tp("r", 1)].Follower())
	require.Equal(t, int32(2), h.b.replicas[tp("r", 1)].LeaderEpoch())
}

// A node that left a partition and joined it again keeps its log across a restart:
// the replay does not remove it at the leave.
func TestReplayKeepsTheLogOfARejoinedReplica(t *testing.T) {
	h := newNodeHarness(t, 1)
	h.commitAll(registerRecords(1, 2)...)
	h.commitAll(assignedTopicRecord("r", nil, pstate(ids(2), ids(2), 2, 0, 0)))
	h.commitAll(changeRecord("r", 0, pstate(ids(2, 1), ids(2), 2, 0, 1)))
	h.commitAll(changeRecord("r", 0, pstate(ids(2), ids(2), 2, 0, 2)))
	h.commitAll(changeRecord("r", 0, pstate(ids(2, 1), ids(2), 2, 0, 3)))
	h.commitAll(changeRecord("r", 0, pstate(ids(2, 1), ids(2, 1), 2, 0, 4)))
	h.commitAll(changeRecord("r", 0, pstate(ids(2, 1), ids(1), 1, 1, 5)))
	produceOK(t, h, "r", values("a", "b"))
	removed := len(h.env.removed)
	h.restart()
	require.Len(t, h.env.removed, removed, "no log removed at the replay")
	require.Equal(t, int64(2), h.b.replicas[tp("r", 0)].EndOffset())
}

// Leader-only requests on a follower, or on a partition hosted elsewhere, get
// NOT_LEADER_OR_FOLLOWER; CurrentLeaderEpoch is checked against the image's epoch.
func TestLeaderOnlyRequestsOnAFollower(t *testing.T) {
	h := newNodeHarness(t, 1)
	h.commitAll(registerRecords(1, 2, 3)...)
	h.commitAll(assignedTopicRecord("r", nil,
		pstate(ids(2, 1), ids(2, 1), 2, 4, 0), // followed here
		pstate(ids(2, 3), ids(2, 3), 2, 0, 0), // elsewhere
		pstate(ids(1, 2), ids(1), 1, 7, 0),    // led here
	))
	for _, p := range []int32{0, 1} {
		pr := producePart(t, h.do(produceReq(1, "r", p, values("x"))))
		requireCode(t, kerr.NotLeaderForPartition, pr.ErrorCode, "produce p%d", p)
		fr := fetchOne(t, h.do(fetchReq("r", p, 0, 0, 1)))
		requireCode(t, kerr.NotLeaderForPartition, fr.ErrorCode, "fetch p%d", p)
		lo := h.do(listOffsetsReq("r", p, -1, -1)).(*kmsg.ListOffsetsResponse)
		requireCode(t, kerr.NotLeaderForPartition, lo.Topics[0].Partitions[0].ErrorCode)
		dr := h.do(deleteRecordsReq("r", p, 0)).(*kmsg.DeleteRecordsResponse)
		requireCode(t, kerr.NotLeaderForPartition, dr.Topics[0].Partitions[0].ErrorCode)
		oe := h.do(epochReq("r", p, 0, -1)).(*kmsg.OffsetForLeaderEpochResponse)
		requireCode(t, kerr.NotLeaderForPartition, oe.Topics[0].Partitions[0].ErrorCode)
	}
	// The epoch is checked before leadership, as Kafka does.
	fr := fetchReq("r", 0, 0, 0, 1)
	fr.Topics[0].Partitions[0].CurrentLeaderEpoch = 3
	requireCode(t, kerr.FencedLeaderEpoch, fetchOne(t, h.do(fr)).ErrorCode)

	// The leader: epochs 7 (current) served, 6 fenced, 8 unknown.
	produceOK2 := producePart(t, h.do(produceReq(-1, "r", 2, values("y"))))
	requireCode(t, nil, produceOK2.ErrorCode)
	for epoch, want := range map[int32]*kerr.Error{7: nil, 6: kerr.FencedLeaderEpoch,
		8: kerr.UnknownLeaderEpoch} {
		req := fetchReq("r", 2, 0, 0, 1)
		req.Topics[0].Partitions[0].CurrentLeaderEpoch = epoch
		requireCode(t, want, fetchOne(t, h.do(req)).ErrorCode, "epoch %d", epoch)
		oe := h.do(epochReq("r", 2, 7, epoch)).(*kmsg.OffsetForLeaderEpochResponse)
		requireCode(t, want, oe.Topics[0].Partitions[0].ErrorCode, "epoch %d", epoch)
	}
	lo := h.do(listOffsetsReq("r", 2, -1, 7)).(*kmsg.ListOffsetsResponse)
	require.Equal(t, int32(7), lo.Topics[0].Partitions[0].LeaderEpoch)
}

// A partition without a leader is LEADER_NOT_AVAILABLE in Metadata; a fenced replica
// is offline.
func TestMetadataOfALeaderlessPartition(t *testing.T) {
	h := newNodeHarness(t, 1)
	recs := registerRecords(1, 2)
	h.commitAll(recs...)
	h.commitAll(assignedTopicRecord("r", nil, pstate(ids(1, 2), ids(1, 2), 1, 0, 0)))
	h.commitAll(meta.Record{Kind: meta.KindBrokerChange, NodeID: 2, BrokerEpoch: 101,
		BrokerState: meta.BrokerFenced})
	h.commitAll(changeRecord("r", 0, pstate(ids(1, 2), ids(1), -1, 1, 1)))
	md := h.do(&kmsg.MetadataRequest{Version: 12, Topics: []kmsg.MetadataRequestTopic{
		{Topic: strp("r")}}}).(*kmsg.MetadataResponse)
	p := md.Topics[0].Partitions[0]
	requireCode(t, kerr.LeaderNotAvailable, p.ErrorCode)
	require.Equal(t, int32(-1), p.Leader)
	require.Equal(t, ids(2), p.OfflineReplicas)
	require.True(t, h.b.replicas[tp("r", 0)].Follower(), "no leader: nobody appends")
}
