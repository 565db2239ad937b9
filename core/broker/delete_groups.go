package broker

// DeleteGroups (API key 42), versions 0–2.
//
// Behaviour: deletes groups that have no members, with their committed offsets: a
// tombstone per offset and one for the group's metadata record are written to the
// group's offsets partition and the group is answered once those are durable, so it
// does not come back after a restart. Per group: members → NON_EMPTY_GROUP; unknown →
// GROUP_ID_NOT_FOUND; offsets not loaded →
// COORDINATOR_NOT_AVAILABLE. A member joining while the tombstones are written keeps
// the group (without offsets).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
)

func (gc *groupCoordinator) handleDeleteGroups(r Request, m *kmsg.DeleteGroupsRequest) {
	resp := m.ResponseKind().(*kmsg.DeleteGroupsResponse)
	// left is released after the loop, so that synchronous answers cannot reply early.
	req := &deleteGroupsReq{req: r, resp: resp, left: 1}
	for _, id := range m.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		resp.Groups = append(resp.Groups, rg)
	}
	for i, id := range m.Groups {
		rg := &resp.Groups[i]
		if rg.ErrorCode = gc.deletableCode(id); rg.ErrorCode != 0 {
			continue
		}
		kvs := []batch.KV{{Key: group.EncodeGroupKey(id)}}
		offs := gc.groups.coord.Offsets(id)
		for _, po := range offs {
			kvs = append(kvs, batch.KV{Key: group.EncodeKey(id, po.TP)})
		}
		req.left++
		gc.writeOffsets(gc.newOffsetWrite(id, kvs, &deleteGroupOwner{parent: req, rg: rg,
			offs: offs}))
	}
	gc.deleteGroupsEnded(req)
}

// groupDeleteWritten removes a deleted group once its tombstones are durable.
func (gc *groupCoordinator) groupDeleteWritten(id string, o *deleteGroupOwner, code int16) {
	if o.rg.ErrorCode = code; code == 0 {
		for _, po := range o.offs {
			gc.groups.coord.ApplyOffset(id, po.TP, nil)
		}
		if g := gc.groups.coord.Group(id); g != nil {
			g.MetadataDeleted() // even if members came back meanwhile
		}
		gc.groups.coord.Remove(id)
		gc.groupChanged(id)
	}
	gc.deleteGroupsEnded(o.parent)
}

// deleteGroupsEnded answers a DeleteGroups request once its last write ended.
func (gc *groupCoordinator) deleteGroupsEnded(req *deleteGroupsReq) {
	if req.left--; req.left == 0 {
		gc.reply(req.req, req.resp)
	}
}

func (gc *groupCoordinator) deletableCode(id string) int16 {
	if code := gc.coordinatorCode(id); code != 0 {
		return code
	}
	g := gc.groups.coord.Group(id)
	switch {
	case g == nil:
		return kerr.GroupIDNotFound.Code
	case g.State() != group.Empty:
		return kerr.NonEmptyGroup.Code
	}
	return 0
}
