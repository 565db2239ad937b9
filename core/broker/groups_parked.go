package broker

// JoinGroup and SyncGroup requests parked in the group coordinator.
//
// The coordinator (core/group) holds a member's JoinGroup until the rebalance
// completes and its SyncGroup until the leader's assignment is durable, and answers
// through the callback it was given (invariant G1). The broker keeps a typed record of
// each such request until that answer, so Pending can list it with its group, member
// and connection. The record only reports: the answer path is the callback's.

import (
	"github.com/sluicemq/sluice/core"
)

// parkedGroupReq is a JoinGroup or SyncGroup request not answered yet.
type parkedGroupReq struct {
	req    Request
	api    string // "JoinGroup" or "SyncGroup"
	group  string
	member string // as the request named it ("" for a new member's first join)
	since  core.Time
}

type parkedKey struct{ conn, id uint64 }

// parkGroupRequest records r before it is handed to the group.
func (gc *groupCoordinator) parkGroupRequest(r Request, api, groupID, member string) {
	if gc.groups.parked == nil {
		gc.groups.parked = map[parkedKey]parkedGroupReq{}
	}
	gc.groups.parked[parkedKey{r.Conn, r.ID}] = parkedGroupReq{req: r, api: api,
		group: groupID, member: member, since: gc.now}
}

// groupAnswered forgets r's record: the group answered it.
func (gc *groupCoordinator) groupAnswered(r Request) {
	delete(gc.groups.parked, parkedKey{r.Conn, r.ID})
}
