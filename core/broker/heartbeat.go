package broker

// Heartbeat (API key 12), versions 0–4.
//
// Behaviour: keeps a member's session alive. Unknown group or member →
// UNKNOWN_MEMBER_ID; another generation → ILLEGAL_GENERATION; a rebalance under way →
// REBALANCE_IN_PROGRESS (the member must rejoin); a static member whose instance id
// was taken over → FENCED_INSTANCE_ID. An empty group id gets INVALID_GROUP_ID.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (gc *groupCoordinator) handleHeartbeat(m *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := m.ResponseKind().(*kmsg.HeartbeatResponse)
	if resp.ErrorCode = gc.memberGroupCode(m.Group); resp.ErrorCode != 0 {
		return resp
	}
	g := gc.groups.coord.Group(m.Group)
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	resp.ErrorCode = g.Heartbeat(gc.now, m.MemberID, m.InstanceID, m.Generation)
	gc.groupChanged(m.Group)
	return resp
}

// memberGroupCode checks the group id of a membership request (join, sync, heartbeat,
// leave): those need a non-empty id, unlike the offset APIs.
func (gc *groupCoordinator) memberGroupCode(groupID string) int16 {
	if groupID == "" || len(groupID) > math.MaxInt16 {
		// Too long for the record keys that store the group (int16 length).
		return kerr.InvalidGroupID.Code
	}
	return gc.coordinatorCode(groupID)
}
