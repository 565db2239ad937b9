package broker

// Conversions between the ACL APIs' wire shapes (kmsg) and core/acl, shared by
// CreateAcls, DescribeAcls and DeleteAcls. Versions 0 carry no pattern type: their
// resource names are literal, as in Kafka.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

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
