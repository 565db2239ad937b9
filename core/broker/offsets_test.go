package broker

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/replica"
)

func TestOffsetFetchUnknownGroupIsMinusOne(t *testing.T) {
	h := newHarness(t)
	for _, v := range versions(kmsg.OffsetFetch) {
		off, code := h.fetchOffset(v, "never-seen", "t", 0)
		requireCode(t, nil, code, "v%d", v)
		require.Equal(t, int64(-1), off, "v%d", v)
	}
	require.Nil(t, h.b.image.Topic(group.OffsetsTopic), "reading creates nothing")
}

func TestOffsetCommitAnsweredOnlyOnceDurable(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 2)
	h.do(&kmsg.FindCoordinatorRequest{Version: 4, CoordinatorKeys: []string{"g"}})
	h.settle()

	h.holdSyncs = true
	id := h.send(commitReq("g", -1, "", "t", int32(0), int64(42)))
	h.settle()
	_, answered := h.reply(id)
	require.False(t, answered, "not answered before the fsync")
	off, _ := h.fetchOffset(8, "g", "t", 0)
	require.Equal(t, int64(-1), off, "not visible before the fsync")

	h.holdSyncs = false
	h.settle()
	resp, answered := h.reply(id)
	require.True(t, answered)
	require.Equal(t, []int16{0}, commitCodes(resp))
	off, _ = h.fetchOffset(8, "g", "t", 0)
	require.Equal(t, int64(42), off)
}

func TestOffsetsSurviveRestartAndUnsyncedOnesDoNot(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 3)
	for p := int32(0); p < 3; p++ {
		require.Equal(t, []int16{0}, commitCodes(h.do(commitReq("g", -1, "", "t", p,
			int64(100+p)))))
	}
	require.Equal(t, []int16{0}, commitCodes(h.do(commitReq("g", -1, "", "t", int32(1),
		int64(7)))), "a later commit wins")
	require.Equal(t, []int16{0}, commitCodes(h.do(commitReq("other", -1, "", "t", int32(0),
		int64(9)))))

	h.restart()
	for _, v := range versions(kmsg.OffsetFetch) {
		for p, want := range []int64{100, 7, 102} {
			off, code := h.fetchOffset(v, "g", "t", int32(p))
			requireCode(t, nil, code)
			require.Equal(t, want, off, "v%d p%d", v, p)
		}
	}
	off, _ := h.fetchOffset(8, "other", "t", 0)
	require.Equal(t, int64(9), off)

	// A commit whose batch never reached disk is neither answered nor kept.
	h.holdSyncs = true
	id := h.send(commitReq("g", -1, "", "t", int32(0), int64(555)))
	h.crash()
	_, answered := h.reply(id)
	require.False(t, answered)
	h.holdSyncs = false
	off, _ = h.fetchOffset(8, "g", "t", 0)
	require.Equal(t, int64(100), off)
}

func TestOffsetCommitEveryVersionAndFetchAll(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.mustCreate("u", 1)
	for _, v := range versions(kmsg.OffsetCommit) {
		req := commitReq("g", -1, "", "t", int32(0), int64(v)*10, "u", int32(0), int64(v))
		req.Version = v
		require.Equal(t, []int16{0, 0}, commitCodes(h.do(req)), "v%d", v)
		off, _ := h.fetchOffset(min(v, maxVersion(kmsg.OffsetFetch)), "g", "t", 0)
		require.Equal(t, int64(v)*10, off, "v%d", v)
	}
	all := kmsg.NewPtrOffsetFetchRequest()
	all.Version, all.Group, all.Topics = 7, "g", nil
	resp := h.do(all).(*kmsg.OffsetFetchResponse)
	require.Len(t, resp.Topics, 2)
	require.Equal(t, "t", resp.Topics[0].Topic)
	require.Equal(t, int64(80), resp.Topics[0].Partitions[0].Offset)
	require.Equal(t, "md", *resp.Topics[0].Partitions[0].Metadata)
	require.Equal(t, int64(8), resp.Topics[1].Partitions[0].Offset)

	g8 := kmsg.NewPtrOffsetFetchRequest()
	g8.Version = 8
	for _, id := range []string{"g", "nobody"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = id // Topics nil: everything
		g8.Groups = append(g8.Groups, rg)
	}
	r8 := h.do(g8).(*kmsg.OffsetFetchResponse)
	require.Len(t, r8.Groups, 2)
	require.Len(t, r8.Groups[0].Topics, 2)
	require.Empty(t, r8.Groups[1].Topics)
}

func TestOffsetCommitValidation(t *testing.T) {
	h := newHarness(t, groupOpts)
	h.mustCreate("t", 1)
	requireCode(t, kerr.IllegalGeneration, commitCodes(h.do(commitReq("nogroup", 3, "m",
		"t", int32(0), int64(1))))[0], "a generation for a group that does not exist")
	codes := commitCodes(h.do(commitReq("g", -1, "", "t", int32(0), int64(1), "t", int32(5),
		int64(1), "missing", int32(0), int64(1))))
	requireCode(t, nil, codes[0])
	requireCode(t, kerr.UnknownTopicOrPartition, codes[1])
	requireCode(t, kerr.UnknownTopicOrPartition, codes[2])
	big := commitReq("g", -1, "", "t", int32(0), int64(1))
	big.Topics[0].Partitions[0].Metadata = strp(string(make([]byte, 5000)))
	requireCode(t, kerr.OffsetMetadataTooLarge, commitCodes(h.do(big))[0])

	a := h.member(1, "g", "t")
	a.joined(a.sendJoin())
	requireCode(t, kerr.RebalanceInProgress, commitCodes(h.do(commitReq("g", a.gen, a.id,
		"t", int32(0), int64(2))))[0], "joined but not yet synced")
	a.synced(a.sendSync(nil))
	requireCode(t, nil, commitCodes(h.do(commitReq("g", a.gen, a.id, "t", int32(0),
		int64(2))))[0])
	requireCode(t, kerr.IllegalGeneration, commitCodes(h.do(commitReq("g", a.gen+1, a.id,
		"t", int32(0), int64(3))))[0])
	requireCode(t, kerr.UnknownMemberID, commitCodes(h.do(commitReq("g", -1, "", "t",
		int32(0), int64(3))))[0], "simple commits only while the group is empty")
	off, _ := h.fetchOffset(8, "g", "t", 0)
	require.Equal(t, int64(2), off)

	// A commit counts as a heartbeat.
	for range 4 {
		h.waitMs(4000)
		requireCode(t, nil, commitCodes(h.do(commitReq("g", a.gen, a.id, "t", int32(0),
			int64(4))))[0])
	}
	require.Equal(t, "Stable", h.describeGroup("g").State)
}

func TestProduceToOffsetsTopicIsRefused(t *testing.T) {
	h := newHarness(t)
	h.do(&kmsg.FindCoordinatorRequest{Version: 4, CoordinatorKeys: []string{"g"}})
	h.settle()
	rec := batch.Build([]batch.KV{{Key: []byte("k"), Value: []byte("v")}}, batch.NoProducer, 1)
	resp := h.do(produceReq(-1, group.OffsetsTopic, 0, rec))
	requireCode(t, kerr.InvalidTopicException, producePart(t, resp).ErrorCode)
}

func TestDeleteGroupsRemovesOffsetsDurably(t *testing.T) {
	h := newHarness(t, groupOpts)
	h.mustCreate("t", 2)
	for _, g := range []string{"gone", "kept"} {
		commitCodes(h.do(commitReq(g, -1, "", "t", int32(0), int64(5), "t", int32(1),
			int64(6))))
	}
	a := h.member(1, "busy", "t")
	a.joined(a.sendJoin())

	for _, v := range versions(kmsg.DeleteGroups) {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = v, []string{"gone", "busy", "unknown"}
		resp := h.do(req).(*kmsg.DeleteGroupsResponse)
		require.Len(t, resp.Groups, 3)
		if v == 0 {
			requireCode(t, nil, resp.Groups[0].ErrorCode)
		} else {
			requireCode(t, kerr.GroupIDNotFound, resp.Groups[0].ErrorCode, "already deleted")
		}
		requireCode(t, kerr.NonEmptyGroup, resp.Groups[1].ErrorCode)
		requireCode(t, kerr.GroupIDNotFound, resp.Groups[2].ErrorCode)
	}
	h.restart()
	off, _ := h.fetchOffset(8, "gone", "t", 1)
	require.Equal(t, int64(-1), off, "the tombstones survive the restart")
	off, _ = h.fetchOffset(8, "kept", "t", 1)
	require.Equal(t, int64(6), off)
	require.Equal(t, "Dead", h.describeGroup("gone").State)
}

func TestOffsetDeleteSparesSubscribedTopics(t *testing.T) {
	h := newHarness(t, groupOpts)
	h.mustCreate("sub", 1)
	h.mustCreate("old", 1)
	commitCodes(h.do(commitReq("g", -1, "", "sub", int32(0), int64(1), "old", int32(0),
		int64(2))))
	a := h.member(1, "g", "sub")
	a.joined(a.sendJoin())

	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "g"
	for _, topic := range []string{"sub", "old", "missing"} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
	}
	resp := h.do(req).(*kmsg.OffsetDeleteResponse)
	requireCode(t, nil, resp.ErrorCode)
	requireCode(t, kerr.GroupSubscribedToTopic, resp.Topics[0].Partitions[0].ErrorCode)
	requireCode(t, nil, resp.Topics[1].Partitions[0].ErrorCode)
	requireCode(t, kerr.UnknownTopicOrPartition, resp.Topics[2].Partitions[0].ErrorCode)
	h.restart()
	off, _ := h.fetchOffset(8, "g", "old", 0)
	require.Equal(t, int64(-1), off)
	off, _ = h.fetchOffset(8, "g", "sub", 0)
	require.Equal(t, int64(1), off)

	req.Group = "unknown"
	requireCode(t, kerr.GroupIDNotFound, h.do(req).(*kmsg.OffsetDeleteResponse).ErrorCode)
}

func TestOffsetsPartitionOfflineMeansCoordinatorNotAvailable(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Groups.OffsetsPartitions = 1 })
	h.mustCreate("t", 1)
	commitCodes(h.do(commitReq("g", -1, "", "t", int32(0), int64(3))))
	h.env.openErr = func(tp core.TopicPartition) error {
		if tp.Topic == group.OffsetsTopic {
			return errors.New("disk gone")
		}
		return nil
	}
	h.restart()
	fc := h.do(&kmsg.FindCoordinatorRequest{Version: 3, CoordinatorKey: "g"})
	requireCode(t, kerr.CoordinatorNotAvailable, fc.(*kmsg.FindCoordinatorResponse).ErrorCode)
	_, code := h.fetchOffset(7, "g", "t", 0)
	requireCode(t, kerr.CoordinatorNotAvailable, code)
	requireCode(t, kerr.CoordinatorNotAvailable, commitCodes(h.do(commitReq("g", -1, "", "t",
		int32(0), int64(4))))[0])

	h.env.openErr = nil
	h.restart()
	off, _ := h.fetchOffset(8, "g", "t", 0)
	require.Equal(t, int64(3), off)
}

func TestOffsetsTopicCannotBeDeletedOrGrown(t *testing.T) {
	h := newHarness(t)
	h.do(&kmsg.FindCoordinatorRequest{Version: 4, CoordinatorKeys: []string{"g"}})
	h.settle()
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = strp(group.OffsetsTopic)
	del.Topics = append(del.Topics, dt)
	requireCode(t, kerr.InvalidTopicException, h.deleteTopics(del).Topics[0].ErrorCode)

	cp := kmsg.NewPtrCreatePartitionsRequest()
	ct := kmsg.NewCreatePartitionsRequestTopic()
	ct.Topic, ct.Count = group.OffsetsTopic, 20
	cp.Topics = append(cp.Topics, ct)
	resp := h.do(cp).(*kmsg.CreatePartitionsResponse)
	requireCode(t, kerr.InvalidTopicException, resp.Topics[0].ErrorCode)
	require.Equal(t, int32(8), h.b.image.Topic(group.OffsetsTopic).Partitions)
}

func TestOffsetCommitRefusesWhatTheRecordCannotHold(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Groups.MetadataMaxBytes = 1 << 20 })
	h.mustCreate("t", 1)
	long := string(make([]byte, 1<<15))
	requireCode(t, kerr.InvalidGroupID, commitCodes(h.do(commitReq(long, -1, "", "t",
		int32(0), int64(1))))[0])
	req := commitReq("g", -1, "", "t", int32(0), int64(1))
	req.Topics[0].Partitions[0].Metadata = strp(long)
	requireCode(t, kerr.OffsetMetadataTooLarge, commitCodes(h.do(req))[0])
}

func TestOffsetsTopicCreationFailureIsRetriable(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.env.metaErr = errors.New("metadata log down")
	requireCode(t, kerr.CoordinatorNotAvailable, commitCodes(h.do(commitReq("g", -1, "", "t",
		int32(0), int64(1))))[0])
	h.env.metaErr = nil
	requireCode(t, nil, commitCodes(h.do(commitReq("g", -1, "", "t", int32(0), int64(2))))[0])
	off, _ := h.fetchOffset(8, "g", "t", 0)
	require.Equal(t, int64(2), off)
}

// Seed 1686: a commit waits for the fsync of its batch when another commit's write to
// the same offsets partition fails unrecoverably (an eviction's fsync of the segment
// had failed). The log goes offline and drops every byte not durable before, the
// waiting batch included; the sync already in flight may still return success. The
// waiting commit must not be answered as stored, nor served, nor survive a restart.
func TestOffsetCommitWaitingWhenAWriteTakesTheLogOfflineIsNotAcknowledged(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Groups.OffsetsPartitions = 1 })
	h.mustCreate("t", 1)
	requireCode(t, nil, commitCodes(h.do(commitReq("g", -1, "", "t", int32(0), int64(82))))[0])
	otp := core.TopicPartition{Topic: group.OffsetsTopic, Partition: 0}
	h.holdSyncs = true
	waiting := h.send(commitReq("g", -1, "", "t", int32(0), int64(84)))
	log := h.env.logs[otp]
	log.AppendErr = fmt.Errorf("fsync before closing an evicted file failed: %w",
		replica.ErrLogOffline)
	requireCode(t, kerr.NotCoordinator,
		commitCodes(h.do(commitReq("other", -1, "", "t", int32(0), int64(7))))[0])
	resp, answered := h.reply(waiting)
	require.True(t, answered, "the waiting commit is answered with the failure at once")
	requireCode(t, kerr.NotCoordinator, commitCodes(resp)[0])

	log.Crash() // the log drops its unsynced bytes: the waiting commit's batch
	h.holdSyncs = false
	h.settle() // the sync in flight returns success all the same
	require.Equal(t, int64(1), h.b.replicas[otp].HighWatermark(),
		"the high-water mark stays at the last durable batch")
	_, code := h.fetchOffset(8, "g", "t", 0)
	requireCode(t, kerr.CoordinatorNotAvailable, code)

	log.AppendErr = nil
	h.restart()
	off, _ := h.fetchOffset(8, "g", "t", 0)
	require.Equal(t, int64(82), off)
}
