package broker

// LeaveGroup (API key 13), versions 0–5.
//
// Behaviour: removes members and starts the rebalance their absence requires. v0–v2
// name one member; v3+ a batch (KIP-345), each answered on its own, a static member
// possibly by instance id alone. Unknown group or member → UNKNOWN_MEMBER_ID (top
// level for v0–v2, per member for v3+); a static member whose instance id was taken
// over → FENCED_INSTANCE_ID. An empty group id gets INVALID_GROUP_ID.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (gc *groupCoordinator) handleLeaveGroup(m *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := m.ResponseKind().(*kmsg.LeaveGroupResponse)
	if resp.ErrorCode = gc.memberGroupCode(m.Group); resp.ErrorCode != 0 {
		return resp
	}
	if m.Version < 3 {
		resp.ErrorCode = gc.leaveOne(m.Group, m.MemberID, nil)
		return resp
	}
	for _, lm := range m.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		rm.ErrorCode = gc.leaveOne(m.Group, lm.MemberID, lm.InstanceID)
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

func (gc *groupCoordinator) leaveOne(groupID, memberID string, instanceID *string) int16 {
	g := gc.groups.coord.Group(groupID)
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	code := g.Leave(gc.now, memberID, instanceID)
	gc.groupChanged(groupID)
	return code
}
