package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

// listAs is listOffsetsReq at version v, from replica id replica (-1: a client).
func listAs(topic string, ts int64, v int16, replica int32) *kmsg.ListOffsetsRequest {
	req := listOffsetsReq(topic, 0, ts, -1)
	req.Version, req.ReplicaID = v, replica
	return req
}

func listedOne(t *testing.T, resp kmsg.Response) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	r := resp.(*kmsg.ListOffsetsResponse)
	require.Len(t, r.Topics, 1)
	require.Len(t, r.Topics[0].Partitions, 1)
	return r.Topics[0].Partitions[0]
}

// A follower learns the high-water mark only at its next fetch, so a follower elected
// leader starts with one below what the old leader acknowledged. Until its own reaches
// the start of its leader epoch (its followers fetched from it), a client's
// ListOffsets(latest) gets OFFSET_NOT_AVAILABLE (LEADER_NOT_AVAILABLE below v5), never
// an offset below an acknowledged acks=all write (KIP-207; the simulator's stale-read,
// seeds 20 27 68 86 of --set nodes=3). Earliest, followers' requests and Fetch are
// answered meanwhile, Fetch with the high-water mark it knows, as Kafka's leader does.
func TestANewLeaderListsOffsetsOnlyOnceItsHighWatermarkCaughtUp(t *testing.T) {
	c := newTestCluster(t, 2, 1, 2, 3)
	c.commit(assignedTopicRecord("r", []meta.Config{{Name: "min.insync.replicas",
		Value: "2"}}, pstate(ids(1, 2, 3), ids(1, 2, 3), 1, 0, 0)))
	old, lv := c.nodes[1], maxVersion(kmsg.ListOffsets)
	id := old.send(produceReq(-1, "r", 0, values("a", "b")))
	c.settle()
	c.replicate(2, 1, "r", 0)
	c.replicate(3, 1, "r", 0)
	c.replicate(2, 1, "r", 0) // node 2 holds [0, 2); the answer says high-water mark 0
	f := c.replicate(3, 1, "r", 0)
	require.Equal(t, int64(2), f.HighWatermark, "node 3's fetch completed the ISR")
	resp, answered := old.reply(id)
	require.True(t, answered)
	requireCode(t, nil, producePart(t, resp).ErrorCode)
	require.Equal(t, int64(2), listedOne(t, old.do(listAs("r", -1, lv, -1))).Offset,
		"acknowledged up to 2")

	// Node 1 is gone; node 2 leads in epoch 1 from its log end, 2, knowing 0.
	c.commit(changeRecord("r", 0, pstate(ids(1, 2, 3), ids(2, 3), 2, 1, 1)))
	leader := c.nodes[2]
	rep := leader.b.replicas[tp("r", 0)]
	require.False(t, rep.Follower())
	require.Equal(t, int64(0), rep.HighWatermark())
	start, ok := rep.LeaderEpochStart()
	require.True(t, ok)
	require.Equal(t, int64(2), start)

	latest := listedOne(t, leader.do(listAs("r", -1, lv, -1)))
	requireCode(t, kerr.OffsetNotAvailable, latest.ErrorCode)
	require.Equal(t, int64(-1), latest.Offset)
	requireCode(t, kerr.LeaderNotAvailable,
		listedOne(t, leader.do(listAs("r", -1, 4, -1))).ErrorCode)
	requireCode(t, kerr.OffsetNotAvailable,
		listedOne(t, leader.do(listAs("r", 1_000, lv, -1))).ErrorCode,
		"a lookup by time finding nothing below the lagging high-water mark")
	earliest := listedOne(t, leader.do(listAs("r", -2, lv, -1)))
	requireCode(t, nil, earliest.ErrorCode)
	require.Equal(t, int64(0), earliest.Offset)
	requireCode(t, nil, listedOne(t, leader.do(listAs("r", -1, lv, 3))).ErrorCode,
		"a follower's request")
	fr := fetchOne(t, leader.do(fetchReq("r", 0, 0, 0, 1)))
	requireCode(t, nil, fr.ErrorCode)
	require.Equal(t, int64(0), fr.HighWatermark, "Fetch serves the high-water mark it knows")
	require.Empty(t, fr.RecordBatches)

	// Node 3 fetches from the new leader: the high-water mark reaches the epoch's start.
	c.replicate(3, 2, "r", 0)
	require.Equal(t, int64(2), rep.HighWatermark())
	latest = listedOne(t, leader.do(listAs("r", -1, lv, -1)))
	requireCode(t, nil, latest.ErrorCode)
	require.Equal(t, int64(2), latest.Offset)
}
