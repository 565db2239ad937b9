package broker

// Conversions between the ACL APIs' wire shapes (kmsg) and core/acl, shared by
// CreateAcls, DescribeAcls and DeleteAcls. Versions 0 carry no pattern type: their
// resource names are literal, as in Kafka.
//
// Without an authorizer (authorizer.class.name empty) the three APIs are answered
// SECURITY_DISABLED, as Kafka answers them: an ACL stored there would decide nothing,
// and a client told "created" would believe its resources protected.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

// maxACLsPerRequest bounds the bindings one CreateAcls request creates and one DeleteAcls
// request removes: they go in one metadata record, which every node applies and holds
// in its snapshot, so a request past it is refused whole (INVALID_REQUEST) and nothing
// is written. Kafka's controller bounds a user operation at the same 10,000 records.
const maxACLsPerRequest = 10_000

// tooManyACLs is the message of a request past maxACLsPerRequest.
func tooManyACLs(what string, n int) *string {
	return strp(fmt.Sprintf("%s %d ACLs in one request, more than %d: split it", what, n,
		maxACLsPerRequest))
}

// wirePattern is the pattern type a request of version v carries (LITERAL before v1).
func wirePattern(v int16, p kmsg.ACLResourcePatternType) acl.PatternType {
	if v < 1 {
		return acl.PatternLiteral
	}
	return acl.PatternType(p)
}

// creationBinding converts one CreateAcls creation, checking it can be stored.
func creationBinding(v int16, c kmsg.CreateACLsRequestCreation) (acl.Binding, error) {
	b := acl.Binding{Type: acl.ResourceType(c.ResourceType), Name: c.ResourceName,
		Pattern: wirePattern(v, c.ResourcePatternType), Principal: c.Principal, Host: c.Host,
		Operation: acl.Operation(c.Operation), Permission: acl.Permission(c.PermissionType)}
	if err := b.Check(); err != nil {
		return acl.Binding{}, fmt.Errorf("invalid ACL %v: %w", b, err)
	}
	return b, nil
}

// describeFilter converts a DescribeAcls request to a filter.
func describeFilter(m *kmsg.DescribeACLsRequest) acl.Filter {
	return acl.Filter{Type: acl.ResourceType(m.ResourceType), Name: m.ResourceName,
		Pattern: wirePattern(m.Version, m.ResourcePatternType), Principal: m.Principal,
		Host: m.Host, Operation: acl.Operation(m.Operation),
		Permission: acl.Permission(m.PermissionType)}
}

// deleteFilter converts one DeleteAcls filter.
func deleteFilter(v int16, f kmsg.DeleteACLsRequestFilter) acl.Filter {
	return acl.Filter{Type: acl.ResourceType(f.ResourceType), Name: f.ResourceName,
		Pattern: wirePattern(v, f.ResourcePatternType), Principal: f.Principal, Host: f.Host,
		Operation: acl.Operation(f.Operation), Permission: acl.Permission(f.PermissionType)}
}

const noAuthorizer = "no authorizer is configured (authorizer.class.name): ACLs decide nothing"

// refuseWithoutAuthorizer answers CreateAcls or DeleteAcls SECURITY_DISABLED when the
// node has no authorizer; true when it did (DescribeAcls: handleDescribeACLs).
func (n *node) refuseWithoutAuthorizer(r Request) bool {
	if n.cfg.Authz.Enabled {
		return false
	}
	code, msg := kerr.SecurityDisabled.Code, strp(noAuthorizer)
	var resp kmsg.Response
	switch m := r.Msg.(type) {
	case *kmsg.CreateACLsRequest:
		res := kmsg.CreateACLsResponseResult{ErrorCode: code, ErrorMessage: msg}
		cr := m.ResponseKind().(*kmsg.CreateACLsResponse)
		cr.Results, resp = slices.Repeat([]kmsg.CreateACLsResponseResult{res},
			len(m.Creations)), cr
	case *kmsg.DeleteACLsRequest:
		res := kmsg.DeleteACLsResponseResult{ErrorCode: code, ErrorMessage: msg}
		dr := m.ResponseKind().(*kmsg.DeleteACLsResponse)
		dr.Results, resp = slices.Repeat([]kmsg.DeleteACLsResponseResult{res},
			len(m.Filters)), dr
	default:
		return false
	}
	n.reply(r, resp)
	return true
}
