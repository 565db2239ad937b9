package broker

// JoinGroup (API key 11), versions 0–9.
//
// Behaviour: the coordinator relays, the leader client assigns (core/group). A first
// join without a member id gets MEMBER_ID_REQUIRED and a fresh id from v4 on (KIP-394);
// before v4 the member is added at once. The answer waits until the rebalance
// completes: every known member rejoined (after group.initial.rebalance.delay.ms for a
// group that was empty) or the largest rebalance timeout passed. The leader's answer
// lists every member with its metadata for the chosen protocol — one every member
// supports, by vote, ties to the leader's preference. v0 has no rebalance timeout: the
// session timeout stands in. Static members (v5+, KIP-345) are supported; a leader
// rejoining as static member triggers a rebalance (SkipAssignment is never set).
// Session timeouts outside group.min/max.session.timeout.ms → INVALID_SESSION_TIMEOUT;
// no common protocol → INCONSISTENT_GROUP_PROTOCOL; group.max.size members →
// GROUP_MAX_SIZE_REACHED; an empty group id → INVALID_GROUP_ID.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/group"
)

func (gc *groupCoordinator) handleJoinGroup(r Request, m *kmsg.JoinGroupRequest) {
	if code := gc.memberGroupCode(m.Group); code != 0 {
		gc.reply(r, joinGroupResponse(m, group.JoinResult{Err: code, Generation: -1,
			MemberID: m.MemberID}))
		return
	}
	req := group.JoinRequest{MemberID: m.MemberID, InstanceID: m.InstanceID,
		ClientID: r.ClientID, ProtocolType: m.ProtocolType,
		SessionMs: m.SessionTimeoutMillis, RebalanceMs: m.RebalanceTimeoutMillis,
		RequireKnownMemberID: m.Version >= 4}
	if m.Version == 0 {
		req.RebalanceMs = m.SessionTimeoutMillis
	}
	for _, p := range m.Protocols {
		req.Protocols = append(req.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	g := gc.groups.coord.GetOrCreate(m.Group)
	gc.parkGroupRequest(r, "JoinGroup", m.Group, m.MemberID)
	g.Join(gc.now, req, func(res group.JoinResult) {
		gc.groupAnswered(r)
		gc.reply(r, joinGroupResponse(m, res))
	})
	gc.groupChanged(m.Group)
}

func joinGroupResponse(m *kmsg.JoinGroupRequest, res group.JoinResult) *kmsg.JoinGroupResponse {
	resp := m.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.ErrorCode = res.Err
	resp.Generation = res.Generation
	resp.LeaderID, resp.MemberID = res.LeaderID, res.MemberID
	// Never null: before v7 the field is not nullable on the wire.
	resp.ProtocolType, resp.Protocol = strp(res.ProtocolType), strp(res.Protocol)
	for _, jm := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = jm.MemberID, jm.InstanceID, jm.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp
}
