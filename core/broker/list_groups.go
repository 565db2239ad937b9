package broker

// ListGroups (API key 16), versions 0–5.
//
// Behaviour: every group this node coordinates, sorted by id: groups with members and
// groups that only hold committed offsets (state Empty). v4 filters by state (Kafka's
// names, case-insensitive), v5 by type: every group here is "classic". A single node
// loads its offsets at start; a cluster node leading an offsets partition still loading
// answers COORDINATOR_LOAD_IN_PROGRESS (groups_load.go), as Kafka does.

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (gc *groupCoordinator) handleListGroups(m *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := m.ResponseKind().(*kmsg.ListGroupsResponse)
	if gc.loading() {
		// As Kafka: the list would miss the groups of a partition still loading.
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp
	}
	if !matchesFilter(m.TypesFilter, "classic") {
		return resp
	}
	for _, id := range gc.groups.coord.GroupIDs() {
		g := gc.groups.coord.Group(id)
		if !matchesFilter(m.StatesFilter, g.State().String()) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType = id, g.ProtocolType()
		rg.GroupState, rg.GroupType = g.State().String(), "classic"
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// matchesFilter reports whether v passes a ListGroups filter (empty: everything).
func matchesFilter(filter []string, v string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(f, v) {
			return true
		}
	}
	return false
}
