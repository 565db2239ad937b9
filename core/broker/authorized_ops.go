package broker

// Authorized operations (KIP-430): a client that asks is told, per topic (Metadata
// v8+), per group (DescribeGroups v3+) and for the cluster (Metadata v8–10,
// DescribeCluster), which operations its principal may perform there, as a bit field
// with bit N set for the ACL operation whose code is N. With the authorizer off every
// operation the resource type supports is set, as Kafka answers without an authorizer.
// A client that does not ask gets Kafka's "not provided" (math.MinInt32, kmsg's
// default). Entries answered with an error (an unknown or refused topic or group) carry
// none. Filled in when the answer leaves (node.reply), after the authorizer's own fixes.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

// supportedOps are the operations Kafka defines on each resource type
// (AclEntry.supportedOperations).
var supportedOps = map[acl.ResourceType][]acl.Operation{
	acl.ResourceTopic: {acl.OpRead, acl.OpWrite, acl.OpCreate, acl.OpDescribe, acl.OpDelete,
		acl.OpAlter, acl.OpDescribeConfigs, acl.OpAlterConfigs},
	acl.ResourceGroup: {acl.OpRead, acl.OpDescribe, acl.OpDelete},
	acl.ResourceCluster: {acl.OpCreate, acl.OpClusterAction, acl.OpDescribeConfigs,
		acl.OpAlterConfigs, acl.OpIdempotentWrite, acl.OpAlter, acl.OpDescribe},
}

// authorizedOps is the bit field of the operations r's principal may perform on the
// resource.
func (n *node) authorizedOps(r Request, t acl.ResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOps[t] {
		if n.permits(r, op, t, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// permits is allowed without its log line: asking which operations are allowed is not
// a refused request.
func (n *node) permits(r Request, op acl.Operation, t acl.ResourceType, name string) bool {
	if !n.cfg.Authz.Enabled {
		return true
	}
	return n.authorizer().Authorize(n.aclSet(), acl.Who{Principal: r.Principal, Host: r.Host},
		op, t, name)
}

// fillAuthorizedOps sets the authorized operations an answer's request asked for.
func (n *node) fillAuthorizedOps(r Request, resp kmsg.Response) {
	switch m := r.Msg.(type) {
	case *kmsg.MetadataRequest:
		if mr, ok := resp.(*kmsg.MetadataResponse); ok && m.Version >= 8 {
			n.metadataAuthorizedOps(r, m, mr)
		}
	case *kmsg.DescribeClusterRequest:
		if dr, ok := resp.(*kmsg.DescribeClusterResponse); ok &&
			m.IncludeClusterAuthorizedOperations && dr.ErrorCode == 0 {
			dr.ClusterAuthorizedOperations = n.authorizedOps(r, acl.ResourceCluster,
				acl.ClusterName)
		}
	case *kmsg.DescribeGroupsRequest:
		if dr, ok := resp.(*kmsg.DescribeGroupsResponse); ok && m.Version >= 3 &&
			m.IncludeAuthorizedOperations {
			for i := range dr.Groups {
				if g := &dr.Groups[i]; g.ErrorCode == 0 {
					g.AuthorizedOperations = n.authorizedOps(r, acl.ResourceGroup, g.Group)
				}
			}
		}
	}
}

func (n *node) metadataAuthorizedOps(r Request, m *kmsg.MetadataRequest,
	resp *kmsg.MetadataResponse) {
	if m.IncludeTopicAuthorizedOperations {
		for i := range resp.Topics {
			if t := &resp.Topics[i]; t.ErrorCode == 0 && t.Topic != nil {
				t.AuthorizedOperations = n.authorizedOps(r, acl.ResourceTopic, *t.Topic)
			}
		}
	}
	if m.IncludeClusterAuthorizedOperations && m.Version <= 10 {
		resp.AuthorizedOperations = n.authorizedOps(r, acl.ResourceCluster, acl.ClusterName)
	}
}
