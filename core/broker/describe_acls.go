package broker

// DescribeAcls (key 29), versions 0–3.
//
// Lists the bindings of this node's image that pass the filter (acl.Filter: a null
// name, principal or host matches any; ANY matches any value; MATCH lists every
// binding that applies to the named resource), grouped by resource pattern and in a
// fixed order. A filter with an UNKNOWN value → INVALID_REQUEST; without an authorizer
// → SECURITY_DISABLED, as in Kafka (acls.go). A read of the image: it never waits.
// Needs DESCRIBE on the cluster (authorize.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

func (n *node) handleDescribeACLs(m *kmsg.DescribeACLsRequest) *kmsg.DescribeACLsResponse {
	resp := m.ResponseKind().(*kmsg.DescribeACLsResponse)
	if !n.cfg.Authz.Enabled {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, strp(noAuthorizer)
		return resp
	}
	f := describeFilter(m)
	if err := f.Check(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, strp(err.Error())
		return resp
	}
	type resKey struct {
		t       acl.ResourceType
		name    string
		pattern acl.PatternType
	}
	at := map[resKey]int{}
	for _, b := range n.image.ACLs().Select(f) {
		k := resKey{b.Type, b.Name, b.Pattern}
		i, ok := at[k]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName = kmsg.ACLResourceType(b.Type), b.Name
			r.ResourcePatternType = kmsg.ACLResourcePatternType(b.Pattern)
			i, at[k] = len(resp.Resources), len(resp.Resources)
			resp.Resources = append(resp.Resources, r)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = b.Principal, b.Host
		a.Operation, a.PermissionType = kmsg.ACLOperation(b.Operation),
			kmsg.ACLPermissionType(b.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp
}
