package broker

// SyncGroup (API key 14), versions 0–5.
//
// Behaviour: the leader sends every member's assignment; each member gets its own.
// Followers that ask before the leader wait for it (bounded by the rebalance timeout,
// after which members that never synced are dropped and the group rebalances). In a
// Stable group the current assignment is answered at once. Unknown member →
// UNKNOWN_MEMBER_ID; another generation → ILLEGAL_GENERATION; a rebalance under way →
// REBALANCE_IN_PROGRESS; v5's protocol type and name must match the group's
// (INCONSISTENT_GROUP_PROTOCOL). An empty group id gets INVALID_GROUP_ID.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/group"
)

func (gc *groupCoordinator) handleSyncGroup(r Request, m *kmsg.SyncGroupRequest) {
	answer := func(res group.SyncResult) {
		gc.groupAnswered(r)
		gc.reply(r, syncGroupResponse(m, res))
	}
	if code := gc.memberGroupCode(m.Group); code != 0 {
		answer(group.SyncResult{Err: code})
		return
	}
	g := gc.groups.coord.Group(m.Group)
	if g == nil {
		answer(group.SyncResult{Err: kerr.UnknownMemberID.Code})
		return
	}
	req := group.SyncRequest{MemberID: m.MemberID, InstanceID: m.InstanceID,
		Generation: m.Generation, ProtocolType: m.ProtocolType, Protocol: m.Protocol}
	for _, a := range m.GroupAssignment {
		req.Assignments = append(req.Assignments,
			group.Assignment{MemberID: a.MemberID, Data: a.MemberAssignment})
	}
	gc.parkGroupRequest(r, "SyncGroup", m.Group, m.MemberID)
	g.Sync(gc.now, req, answer)
	gc.groupChanged(m.Group)
}

func syncGroupResponse(m *kmsg.SyncGroupRequest, res group.SyncResult) *kmsg.SyncGroupResponse {
	resp := m.ResponseKind().(*kmsg.SyncGroupResponse)
	resp.ErrorCode = res.Err
	if res.Err == 0 {
		resp.ProtocolType, resp.Protocol = strp(res.ProtocolType), strp(res.Protocol)
	}
	// Never null: clients decode an empty assignment, not a missing one.
	resp.MemberAssignment = res.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}
