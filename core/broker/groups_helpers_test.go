package broker

import (
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers of the group tests: one simulated consumer per member, speaking the latest
// versions unless a test says otherwise.

// groupOpts makes groups quick to form in tests: no initial delay unless asked for.
func groupOpts(c *Config) { c.Groups.Coordinator.InitialRebalanceDelayMs = 0 }

// member is one consumer of a group, on its own connection.
type member struct {
	h     *harness
	conn  uint64
	group string
	id    string
	gen   int32
	// topics it subscribes to (its consumer protocol metadata)
	topics []string
}

func (h *harness) member(conn uint64, group string, topics ...string) *member {
	return &member{h: h, conn: conn, group: group, topics: topics}
}

func (m *member) joinReq() *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = maxVersion(kmsg.JoinGroup)
	req.Group, req.MemberID = m.group, m.id
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10_000, 30_000
	req.ProtocolType = "consumer"
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = m.topics
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", md.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	return req
}

// sendJoin sends a JoinGroup and returns the request id; a first join (no id) does the
// MEMBER_ID_REQUIRED round trip first.
func (m *member) sendJoin() uint64 {
	m.h.t.Helper()
	if m.id == "" {
		resp := m.h.doOn(m.conn, m.joinReq()).(*kmsg.JoinGroupResponse)
		requireCode(m.h.t, kerr.MemberIDRequired, resp.ErrorCode)
		require.NotEmpty(m.h.t, resp.MemberID)
		m.id = resp.MemberID
	}
	return m.h.sendOn(m.conn, m.joinReq())
}

// joined returns the answer to a join sent earlier, failing if there is none yet.
func (m *member) joined(id uint64) *kmsg.JoinGroupResponse {
	m.h.t.Helper()
	r, ok := m.h.reply(id)
	require.True(m.h.t, ok, "join of %s not answered", m.id)
	resp := r.(*kmsg.JoinGroupResponse)
	if resp.ErrorCode == 0 {
		m.gen = resp.Generation
	}
	return resp
}

func (m *member) syncReq(assign map[string]string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = maxVersion(kmsg.SyncGroup)
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	req.ProtocolType, req.Protocol = strp("consumer"), strp("range")
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	return req
}

func (m *member) sendSync(assign map[string]string) uint64 {
	return m.h.sendOn(m.conn, m.syncReq(assign))
}

// synced returns the answer to a sync sent earlier, delivering log syncs until it comes
// (the answer waits for the generation's metadata record to be durable); it fails if
// none comes.
func (m *member) synced(id uint64) *kmsg.SyncGroupResponse {
	m.h.t.Helper()
	for range maxSettleRounds {
		if _, ok := m.h.reply(id); ok || m.h.deliver() == 0 {
			break
		}
	}
	r, ok := m.h.reply(id)
	require.True(m.h.t, ok, "sync of %s not answered", m.id)
	return r.(*kmsg.SyncGroupResponse)
}

func (m *member) heartbeat() int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = maxVersion(kmsg.Heartbeat)
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	return m.h.doOn(m.conn, req).(*kmsg.HeartbeatResponse).ErrorCode
}

func (m *member) leave() int16 {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = maxVersion(kmsg.LeaveGroup)
	req.Group = m.group
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = m.id
	req.Members = append(req.Members, lm)
	resp := m.h.doOn(m.conn, req).(*kmsg.LeaveGroupResponse)
	require.Zero(m.h.t, resp.ErrorCode)
	require.Len(m.h.t, resp.Members, 1)
	return resp.Members[0].ErrorCode
}

// doOn is do on a given connection.
func (h *harness) doOn(conn uint64, req kmsg.Request) kmsg.Response {
	h.t.Helper()
	id := h.sendOn(conn, req)
	for range maxSettleRounds {
		if resp, ok := h.reply(id); ok {
			return resp
		}
		if h.deliver() == 0 {
			break
		}
	}
	resp, ok := h.reply(id)
	require.True(h.t, ok, "no reply to %T", req)
	return resp
}

// commitReq builds an OffsetCommit of one offset per (topic, partition, offset) triple.
func commitReq(group string, gen int32, member string, offs ...any) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = maxVersion(kmsg.OffsetCommit)
	req.Group, req.Generation, req.MemberID = group, gen, member
	for i := 0; i+2 < len(offs); i += 3 {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = offs[i].(string)
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = offs[i+1].(int32), offs[i+2].(int64)
		p.Metadata = strp("md")
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
	}
	return req
}

// commitCodes flattens a commit answer into its per-partition codes, in order.
func commitCodes(resp kmsg.Response) []int16 {
	var out []int16
	for _, t := range resp.(*kmsg.OffsetCommitResponse).Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// fetchOffset returns the committed offset of one partition through OffsetFetch at v.
func (h *harness) fetchOffset(v int16, group, topic string, part int32) (int64, int16) {
	h.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = v
	if v >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, []int32{part}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		resp := h.do(req).(*kmsg.OffsetFetchResponse)
		require.Len(h.t, resp.Groups, 1)
		rg := resp.Groups[0]
		if rg.ErrorCode != 0 {
			return -1, rg.ErrorCode
		}
		p := rg.Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{part}
	req.Topics = append(req.Topics, rt)
	resp := h.do(req).(*kmsg.OffsetFetchResponse)
	if resp.ErrorCode != 0 {
		return -1, resp.ErrorCode
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

func (h *harness) describeGroup(group string) kmsg.DescribeGroupsResponseGroup {
	h.t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = maxVersion(kmsg.DescribeGroups)
	req.Groups = []string{group}
	resp := h.do(req).(*kmsg.DescribeGroupsResponse)
	require.Len(h.t, resp.Groups, 1)
	return resp.Groups[0]
}

// waitMs advances the harness clock by ms milliseconds.
func (h *harness) waitMs(ms int) { h.advance(time.Duration(ms) * time.Millisecond) }
