package broker

// DescribeGroups (API key 15), versions 0–5.
//
// Behaviour: per group: state (Kafka's names), protocol type, and the members in join
// order with client id. Member metadata and assignments, and the chosen protocol, are
// shown only while the group is Stable, as Kafka does. A group that does not exist is
// answered as state "Dead" with no error (v0–v5). Client hosts are empty: the broker
// does not see addresses. Authorized operations are "not provided".

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/group"
)

func (gc *groupCoordinator) handleDescribeGroups(
	m *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := m.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range m.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.State = group.Dead.String()
		if rg.ErrorCode = gc.coordinatorCode(id); rg.ErrorCode != 0 {
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if g := gc.groups.coord.Group(id); g != nil {
			describeGroup(&rg, g.Describe())
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func describeGroup(rg *kmsg.DescribeGroupsResponseGroup, d group.Description) {
	rg.State, rg.ProtocolType, rg.Protocol = d.State.String(), d.ProtocolType, d.Protocol
	for _, md := range d.Members {
		rm := kmsg.NewDescribeGroupsResponseGroupMember()
		rm.MemberID, rm.InstanceID = md.MemberID, md.InstanceID
		rm.ClientID, rm.ClientHost = md.ClientID, md.ClientHost
		rm.ProtocolMetadata, rm.MemberAssignment = nonNil(md.Metadata), nonNil(md.Assignment)
		rg.Members = append(rg.Members, rm)
	}
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
