package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func epochEndReq(topic string, part, current, epoch int32) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version, req.ReplicaID = maxVersion(kmsg.OffsetForLeaderEpoch), -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = part, current, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func epochEnd(h *harness, topic string, part, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
	resp := h.do(epochEndReq(topic, part, current, epoch)).(*kmsg.OffsetForLeaderEpochResponse)
	require.Len(h.t, resp.Topics, 1)
	require.Len(h.t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

func TestOffsetForLeaderEpochEndsEpochZeroAtTheLogEnd(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 2)
	p := epochEnd(h, "t", 0, 0, 0)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, [2]int64{0, 0}, [2]int64{int64(p.LeaderEpoch), p.EndOffset}, "empty log")

	produceOK(t, h, "t", values("a", "b", "c"))
	p = epochEnd(h, "t", 0, -1, 0)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, int64(3), p.EndOffset)
	require.Equal(t, int32(0), p.LeaderEpoch)

	// An epoch this node never led is unknown: -1/-1, no error.
	p = epochEnd(h, "t", 0, 0, 7)
	require.Zero(t, p.ErrorCode)
	require.Equal(t, [2]int64{-1, -1}, [2]int64{int64(p.LeaderEpoch), p.EndOffset})

	require.Equal(t, kerr.UnknownLeaderEpoch.Code, epochEnd(h, "t", 0, 1, 0).ErrorCode)
	require.Equal(t, kerr.FencedLeaderEpoch.Code, epochEnd(h, "t", 0, -2, 0).ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, epochEnd(h, "t", 2, 0, 0).ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, epochEnd(h, "nope", 0, 0, 0).ErrorCode)

	h.restart()
	require.Equal(t, int64(3), epochEnd(h, "t", 0, 0, 0).EndOffset, "the epoch survives a restart")
}

func TestFetchAndListOffsetsCheckTheCurrentLeaderEpoch(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	produceOK(t, h, "t", values("a"))
	for current, want := range map[int32]int16{-1: 0, 0: 0, 1: kerr.UnknownLeaderEpoch.Code,
		-3: kerr.FencedLeaderEpoch.Code} {
		f := fetchReq("t", 0, 0, 0, 1)
		f.Topics[0].Partitions[0].CurrentLeaderEpoch = current
		require.Equal(t, want, fetchPart(t, h.do(f)).ErrorCode, "fetch, current epoch %d", current)

		l := kmsg.NewPtrListOffsetsRequest()
		l.Version = maxVersion(kmsg.ListOffsets)
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "t"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp, lp.CurrentLeaderEpoch = -1, current
		lt.Partitions = append(lt.Partitions, lp)
		l.Topics = append(l.Topics, lt)
		got := h.do(l).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		require.Equal(t, want, got.ErrorCode, "list offsets, current epoch %d", current)
	}
}
