package acl

import (
	"fmt"
	"strings"
)

// ResourceType is what a binding protects (Kafka's numbers).
type ResourceType int8

// The resource types. Any only appears in filters.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
)

// ClusterName is the name of the one cluster resource.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, principal and host that match every one.
const Wildcard = "*"

// PatternType is how a binding's resource name matches (Kafka's numbers). Any and
// Match only appear in filters.
type PatternType int8

// The pattern types.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is what a request does to a resource (Kafka's numbers). Any only appears
// in filters; All in a binding stands for every operation.
type Operation int8

// The operations.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
)

// Permission is allow or deny (Kafka's numbers). Any only appears in filters.
type Permission int8

// The permissions.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	Deny              Permission = 2
	Allow             Permission = 3
)

// Binding is one ACL: Principal may (Allow) or may not (Deny) do Operation on the
// resources Type/Name/Pattern names, from Host ("*": any host).
type Binding struct {
	Type       ResourceType `json:"resource_type"`
	Name       string       `json:"resource_name"`
	Pattern    PatternType  `json:"pattern_type"`
	Principal  string       `json:"principal"`
	Host       string       `json:"host"`
	Operation  Operation    `json:"operation"`
	Permission Permission   `json:"permission"`
}

func (b Binding) String() string {
	return fmt.Sprintf("(%s:%s:%s, %s from %s: %s %s)", b.Type, b.Pattern, b.Name,
		b.Principal, b.Host, b.Permission, b.Operation)
}

// Check says whether b can be stored: a concrete resource type, pattern, operation
// and permission; a name (the cluster's for the cluster, LITERAL or PREFIXED as in
// Kafka: both cover it alone); a principal of the form Type:name; a host.
func (b Binding) Check() error {
	switch {
	case b.Type < ResourceTopic || b.Type > ResourceTransactionalID:
		return fmt.Errorf("resource type %s cannot be stored in an ACL", b.Type)
	case b.Pattern != PatternLiteral && b.Pattern != PatternPrefixed:
		return fmt.Errorf("pattern type %s cannot be stored in an ACL", b.Pattern)
	case b.Name == "":
		return fmt.Errorf("the resource name is empty")
	case b.Type == ResourceCluster && b.Name != ClusterName:
		return fmt.Errorf("the only name of the cluster resource is %q", ClusterName)
	case b.Operation < OpAll || b.Operation > OpIdempotentWrite:
		return fmt.Errorf("operation %s cannot be stored in an ACL", b.Operation)
	case b.Permission != Allow && b.Permission != Deny:
		return fmt.Errorf("permission %s cannot be stored in an ACL", b.Permission)
	case b.Host == "":
		return fmt.Errorf("the host is empty (use * for any host)")
	}
	if i := strings.IndexByte(b.Principal, ':'); i <= 0 || i == len(b.Principal)-1 {
		return fmt.Errorf("principal %q is not of the form User:name", b.Principal)
	}
	return nil
}

var resourceNames = map[ResourceType]string{ResourceUnknown: "UNKNOWN", ResourceAny: "ANY",
	ResourceTopic: "TOPIC", ResourceGroup: "GROUP", ResourceCluster: "CLUSTER",
	ResourceTransactionalID: "TRANSACTIONAL_ID"}

var patternNames = map[PatternType]string{PatternUnknown: "UNKNOWN", PatternAny: "ANY",
	PatternMatch: "MATCH", PatternLiteral: "LITERAL", PatternPrefixed: "PREFIXED"}

var operationNames = map[Operation]string{OpUnknown: "UNKNOWN", OpAny: "ANY", OpAll: "ALL",
	OpRead: "READ", OpWrite: "WRITE", OpCreate: "CREATE", OpDelete: "DELETE",
	OpAlter: "ALTER", OpDescribe: "DESCRIBE", OpClusterAction: "CLUSTER_ACTION",
	OpDescribeConfigs: "DESCRIBE_CONFIGS", OpAlterConfigs: "ALTER_CONFIGS",
	OpIdempotentWrite: "IDEMPOTENT_WRITE"}

var permissionNames = map[Permission]string{PermissionUnknown: "UNKNOWN",
	PermissionAny: "ANY", Deny: "DENY", Allow: "ALLOW"}

func name[K comparable](m map[K]string, k K, n int8) string {
	if s, ok := m[k]; ok {
		return s
	}
	return fmt.Sprintf("UNKNOWN(%d)", n)
}

func (t ResourceType) String() string { return name(resourceNames, t, int8(t)) }
func (p PatternType) String() string  { return name(patternNames, p, int8(p)) }
func (o Operation) String() string    { return name(operationNames, o, int8(o)) }
func (p Permission) String() string   { return name(permissionNames, p, int8(p)) }

// parse finds the value whose name is s, ignoring case, '-' taken as '_'.
func parse[K comparable](m map[K]string, s, what string) (K, error) {
	want := strings.ReplaceAll(strings.ToUpper(s), "-", "_")
	for k, n := range m {
		if n == want {
			return k, nil
		}
	}
	var zero K
	return zero, fmt.Errorf("unknown %s %q", what, s)
}

// ParseResourceType parses "topic", "TRANSACTIONAL_ID", "transactional-id"...
func ParseResourceType(s string) (ResourceType, error) {
	return parse(resourceNames, s, "resource type")
}

// ParsePatternType parses "literal", "prefixed", "match", "any".
func ParsePatternType(s string) (PatternType, error) {
	return parse(patternNames, s, "pattern type")
}

// ParseOperation parses "read", "describe-configs", "ALL"...
func ParseOperation(s string) (Operation, error) { return parse(operationNames, s, "operation") }

// ParsePermission parses "allow" or "deny" (and "any").
func ParsePermission(s string) (Permission, error) {
	return parse(permissionNames, s, "permission")
}
