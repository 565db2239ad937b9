package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/group"
)

func TestGroupJoinSyncHeartbeatRebalanceLeave(t *testing.T) {
	h := newHarness(t) // Kafka's 3 s initial rebalance delay
	a, b := h.member(1, "g", "t"), h.member(2, "g", "t")
	ja, jb := a.sendJoin(), b.sendJoin()
	_, answered := h.reply(ja)
	require.False(t, answered, "the initial delay gathers members first")
	h.waitMs(3000)
	ra, rb := a.joined(ja), b.joined(jb)
	requireCode(t, nil, ra.ErrorCode)
	requireCode(t, nil, rb.ErrorCode)
	require.Equal(t, int32(1), ra.Generation)
	require.Equal(t, a.id, ra.LeaderID, "the first member to join leads")
	require.Equal(t, a.id, rb.LeaderID)
	require.Len(t, ra.Members, 2, "the leader sees every member")
	require.Empty(t, rb.Members)
	require.Equal(t, "range", *ra.Protocol)
	require.Equal(t, "consumer", *rb.ProtocolType)
	require.Equal(t, "CompletingRebalance", h.describeGroup("g").State)

	sb := b.sendSync(nil)
	_, answered = h.reply(sb)
	require.False(t, answered, "followers wait for the leader's assignment")
	sa := a.sendSync(map[string]string{a.id: "for-a", b.id: "for-b"})
	require.Equal(t, "for-a", string(a.synced(sa).MemberAssignment))
	require.Equal(t, "for-b", string(b.synced(sb).MemberAssignment))

	d := h.describeGroup("g")
	require.Equal(t, "Stable", d.State)
	require.Equal(t, "range", d.Protocol)
	require.Len(t, d.Members, 2)
	require.Equal(t, "harness", d.Members[0].ClientID)
	require.Equal(t, "for-b", string(d.Members[1].MemberAssignment))

	h.waitMs(5000)
	requireCode(t, nil, a.heartbeat())
	requireCode(t, nil, b.heartbeat())

	// A third member: the others hear of it through their heartbeats and rejoin.
	c := h.member(3, "g", "t")
	jc := c.sendJoin()
	requireCode(t, kerr.RebalanceInProgress, a.heartbeat())
	requireCode(t, kerr.RebalanceInProgress, b.heartbeat())
	ja, jb = a.sendJoin(), b.sendJoin()
	require.Equal(t, int32(2), c.joined(jc).Generation)
	require.Len(t, a.joined(ja).Members, 3)
	require.Equal(t, a.id, b.joined(jb).LeaderID)

	// The leader leaves: the longest-standing remaining member leads the next generation.
	requireCode(t, nil, a.leave())
	requireCode(t, kerr.UnknownMemberID, a.leave())
	requireCode(t, kerr.RebalanceInProgress, b.heartbeat())
	jb, jc = b.sendJoin(), c.sendJoin()
	require.Equal(t, int32(3), b.joined(jb).Generation)
	require.Equal(t, b.id, c.joined(jc).LeaderID)
}

func TestGroupSessionExpiryOnVirtualTime(t *testing.T) {
	h := newHarness(t, groupOpts)
	a := h.member(1, "g", "t")
	a.joined(a.sendJoin())
	a.synced(a.sendSync(map[string]string{a.id: "x"}))
	b := h.member(2, "g", "t")
	jb := b.sendJoin()
	a.joined(a.sendJoin())
	b.joined(jb)
	sb := b.sendSync(nil)
	a.synced(a.sendSync(nil))
	b.synced(sb)

	// b heartbeats, a goes silent: its 10 s session runs out.
	for range 3 {
		h.waitMs(3000)
		requireCode(t, nil, b.heartbeat())
	}
	h.waitMs(2000)
	requireCode(t, kerr.RebalanceInProgress, b.heartbeat())
	requireCode(t, kerr.UnknownMemberID, a.heartbeat())
	d := h.describeGroup("g")
	require.Equal(t, "PreparingRebalance", d.State)
	require.Len(t, d.Members, 1)

	// b rejoins alone, then goes silent too: the group ends Empty, keeps its generation
	// until the next expiry pass (as Kafka until its next cleanup), then is forgotten.
	b.joined(b.sendJoin())
	b.synced(b.sendSync(nil))
	h.waitMs(10_000)
	require.Equal(t, "Empty", h.describeGroup("g").State)
	c := h.member(1, "g", "t")
	c.joined(c.sendJoin())
	require.Greater(t, c.gen, b.gen, "generations continue")
	c.synced(c.sendSync(nil))
	h.waitMs(10_000)
	h.waitMs(int(DefaultGroupConfig().RetentionCheckIntervalMs))
	require.Equal(t, "Dead", h.describeGroup("g").State, "no members, no offsets: gone")
}

func TestGroupRequestsForUnknownGroupsAndMembers(t *testing.T) {
	h := newHarness(t, groupOpts)
	ghost := h.member(1, "nope", "t")
	ghost.id, ghost.gen = "ghost", 1
	requireCode(t, kerr.UnknownMemberID, ghost.heartbeat())
	requireCode(t, kerr.UnknownMemberID, ghost.synced(ghost.sendSync(nil)).ErrorCode)
	requireCode(t, kerr.UnknownMemberID, ghost.leave())
	requireCode(t, kerr.UnknownMemberID, ghost.joined(ghost.h.sendOn(1, ghost.joinReq())).ErrorCode)

	a := h.member(1, "g", "t")
	a.joined(a.sendJoin())
	ghost.group = "g"
	requireCode(t, kerr.UnknownMemberID, ghost.heartbeat())
	a.gen = 7
	requireCode(t, kerr.IllegalGeneration, a.heartbeat())
	requireCode(t, kerr.IllegalGeneration, a.synced(a.sendSync(nil)).ErrorCode)

	empty := h.member(1, "", "t")
	requireCode(t, kerr.InvalidGroupID, empty.heartbeat())
	resp := h.do(empty.joinReq()).(*kmsg.JoinGroupResponse)
	requireCode(t, kerr.InvalidGroupID, resp.ErrorCode)
}

func TestGroupJoinEveryVersion(t *testing.T) {
	for _, v := range versions(kmsg.JoinGroup) {
		h := newHarness(t, groupOpts)
		m := h.member(1, "g", "t")
		req := m.joinReq()
		req.Version = v
		resp := h.do(req).(*kmsg.JoinGroupResponse)
		if v >= 4 {
			requireCode(t, kerr.MemberIDRequired, resp.ErrorCode, "v%d", v)
			req.MemberID = resp.MemberID
			resp = h.do(req).(*kmsg.JoinGroupResponse)
		}
		requireCode(t, nil, resp.ErrorCode, "v%d", v)
		require.Equal(t, int32(1), resp.Generation, "v%d", v)
		require.Equal(t, resp.MemberID, resp.LeaderID, "v%d", v)
		require.Len(t, resp.Members, 1, "v%d", v)

		sreq := kmsg.NewPtrSyncGroupRequest()
		sreq.Version = min(v, maxVersion(kmsg.SyncGroup))
		sreq.Group, sreq.MemberID, sreq.Generation = "g", resp.MemberID, 1
		sresp := h.do(sreq).(*kmsg.SyncGroupResponse)
		requireCode(t, nil, sresp.ErrorCode, "v%d", v)
		require.NotNil(t, sresp.MemberAssignment)

		for _, hv := range versions(kmsg.Heartbeat) {
			hreq := kmsg.NewPtrHeartbeatRequest()
			hreq.Version, hreq.Group, hreq.MemberID, hreq.Generation = hv, "g", resp.MemberID, 1
			requireCode(t, nil, h.do(hreq).(*kmsg.HeartbeatResponse).ErrorCode, "hb v%d", hv)
		}
		lreq := kmsg.NewPtrLeaveGroupRequest()
		lreq.Version, lreq.Group = min(v, maxVersion(kmsg.LeaveGroup)), "g"
		if lreq.Version < 3 {
			lreq.MemberID = resp.MemberID
		} else {
			lm := kmsg.NewLeaveGroupRequestMember()
			lm.MemberID = resp.MemberID
			lreq.Members = append(lreq.Members, lm)
		}
		lresp := h.do(lreq).(*kmsg.LeaveGroupResponse)
		requireCode(t, nil, lresp.ErrorCode, "leave v%d", lreq.Version)
		require.Equal(t, "Empty", h.describeGroup("g").State, "kept until the expiry pass")
	}
}

func TestGroupStaticMemberRejoinKeepsAssignment(t *testing.T) {
	h := newHarness(t, groupOpts)
	a := h.member(1, "g", "t")
	a.joined(a.sendJoin())
	a.synced(a.sendSync(nil))
	join := func() *kmsg.JoinGroupRequest {
		req := h.member(2, "g", "t").joinReq()
		req.InstanceID = strp("pod-0")
		return req
	}
	js := h.sendOn(2, join())
	a.joined(a.sendJoin())
	r, ok := h.reply(js)
	require.True(t, ok)
	s := h.member(2, "g", "t")
	s.id, s.gen = r.(*kmsg.JoinGroupResponse).MemberID, 2
	ss := s.sendSync(nil)
	a.synced(a.sendSync(map[string]string{s.id: "mine"}))
	require.Equal(t, "mine", string(s.synced(ss).MemberAssignment))

	// The pod restarts: same instance id, no member id. No rebalance; old id fenced.
	again := h.doOn(2, join()).(*kmsg.JoinGroupResponse)
	requireCode(t, nil, again.ErrorCode)
	require.NotEqual(t, s.id, again.MemberID)
	require.Equal(t, "Stable", h.describeGroup("g").State)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = 4, "g", s.id, 2, strp("pod-0")
	requireCode(t, kerr.FencedInstanceID, h.do(hb).(*kmsg.HeartbeatResponse).ErrorCode)
	s.id = again.MemberID
	require.Equal(t, "mine", string(s.synced(s.sendSync(nil)).MemberAssignment))
}

func TestFindCoordinatorEveryVersion(t *testing.T) {
	h := newHarness(t)
	require.Nil(t, h.b.image.Topic(group.OffsetsTopic), "created on first need, as Kafka")
	for _, v := range versions(kmsg.FindCoordinator) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version = v
		req.CoordinatorKey = "g"
		req.CoordinatorKeys = []string{"g1", "g2"}
		resp := h.do(req).(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			requireCode(t, nil, resp.ErrorCode, "v%d", v)
			require.Equal(t, h.cfg.NodeID, resp.NodeID)
			require.Equal(t, h.cfg.AdvertisedHost, resp.Host)
			require.Equal(t, h.cfg.AdvertisedPort, resp.Port)
			continue
		}
		require.Len(t, resp.Coordinators, 2)
		for i, c := range resp.Coordinators {
			require.Equal(t, req.CoordinatorKeys[i], c.Key)
			requireCode(t, nil, c.ErrorCode)
			require.Equal(t, h.cfg.NodeID, c.NodeID)
		}
	}
	h.settle()
	topic := h.b.image.Topic(group.OffsetsTopic)
	require.NotNil(t, topic)
	require.Equal(t, int32(8), topic.Partitions)
	md := h.metadata(group.OffsetsTopic)
	require.True(t, md.Topics[0].IsInternal)

	bad := kmsg.NewPtrFindCoordinatorRequest()
	bad.Version, bad.CoordinatorKey, bad.CoordinatorType = 3, "x", 9
	requireCode(t, kerr.InvalidRequest, h.do(bad).(*kmsg.FindCoordinatorResponse).ErrorCode)
}

func TestListAndDescribeGroups(t *testing.T) {
	h := newHarness(t, groupOpts)
	h.mustCreate("t", 1)
	a := h.member(1, "live", "t")
	a.joined(a.sendJoin())
	a.synced(a.sendSync(nil))
	requireCode(t, nil, commitCodes(h.do(commitReq("parked", -1, "", "t", int32(0),
		int64(5))))[0])

	for _, v := range versions(kmsg.ListGroups) {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = v
		resp := h.do(req).(*kmsg.ListGroupsResponse)
		requireCode(t, nil, resp.ErrorCode)
		require.Len(t, resp.Groups, 2, "v%d", v)
		require.Equal(t, "live", resp.Groups[0].Group)
		require.Equal(t, "consumer", resp.Groups[0].ProtocolType)
		if v >= 4 {
			require.Equal(t, "Stable", resp.Groups[0].GroupState)
			require.Equal(t, "Empty", resp.Groups[1].GroupState)
		}
	}
	req := kmsg.NewPtrListGroupsRequest()
	req.Version, req.StatesFilter = 4, []string{"empty"}
	resp := h.do(req).(*kmsg.ListGroupsResponse)
	require.Len(t, resp.Groups, 1)
	require.Equal(t, "parked", resp.Groups[0].Group)
	req.Version, req.StatesFilter, req.TypesFilter = 5, nil, []string{"consumer"}
	require.Empty(t, h.do(req).(*kmsg.ListGroupsResponse).Groups, "no KIP-848 groups")

	for _, v := range versions(kmsg.DescribeGroups) {
		dreq := kmsg.NewPtrDescribeGroupsRequest()
		dreq.Version, dreq.Groups = v, []string{"live", "parked", "unknown"}
		dresp := h.do(dreq).(*kmsg.DescribeGroupsResponse)
		require.Len(t, dresp.Groups, 3)
		require.Equal(t, "Stable", dresp.Groups[0].State, "v%d", v)
		require.Len(t, dresp.Groups[0].Members, 1)
		require.Equal(t, "Empty", dresp.Groups[1].State)
		require.Equal(t, "Dead", dresp.Groups[2].State)
		requireCode(t, nil, dresp.Groups[2].ErrorCode)
	}
}

func TestGroupSettings(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Set("offsets.topic.num.partitions", "3"))
	require.NoError(t, c.Set("group.initial.rebalance.delay.ms", "0"))
	require.NoError(t, c.Set("group.min.session.timeout.ms", "100"))
	require.Equal(t, int32(3), c.Groups.OffsetsPartitions)
	require.Equal(t, int32(0), c.Groups.Coordinator.InitialRebalanceDelayMs)
	require.Equal(t, int32(100), c.Groups.Coordinator.MinSessionTimeoutMs)
	require.Error(t, c.Set("offsets.topic.num.partitions", "0"))
	require.Error(t, c.Set("group.max.size", "many"))
	require.Contains(t, SettingNames(), "group.initial.rebalance.delay.ms")

	h := newHarness(t, func(c *Config) { c.Groups.OffsetsPartitions = 3 })
	h.do(&kmsg.FindCoordinatorRequest{Version: 4, CoordinatorKeys: []string{"g"}})
	h.settle()
	require.Equal(t, int32(3), h.b.image.Topic(group.OffsetsTopic).Partitions)
}

// TestFetchEmptyRecordSetIsNotNull guards kcat -G: librdkafka (Fetch v11) fails to parse
// a partition whose record set is null, so a consumer at the end of a partition never
// sees end-of-partition and never commits.
func TestFetchEmptyRecordSetIsNotNull(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	resp := h.b.readFetchPartition("t", &kmsg.FetchRequestTopicPartition{Partition: 0,
		PartitionMaxBytes: 1 << 20}, 1<<20, false)
	require.NotNil(t, resp.RecordBatches)
	missing := h.b.readFetchPartition("missing", &kmsg.FetchRequestTopicPartition{},
		1<<20, false)
	require.NotNil(t, missing.RecordBatches)
	wire := (&kmsg.FetchResponse{Version: 11, Topics: []kmsg.FetchResponseTopic{{Topic: "t",
		Partitions: []kmsg.FetchResponseTopicPartition{resp}}}}).AppendTo(nil)
	require.Equal(t, []byte{0, 0, 0, 0}, wire[len(wire)-4:], "record set size 0, not -1")
}
