package acl

import (
	"fmt"
	"strings"
)

// Filter selects bindings (DescribeAcls, DeleteAcls). A nil Name, Principal or Host
// matches any; Any in an enumeration matches any value. Pattern Match selects the
// bindings that would apply to the resource Name: the literal ones of that name or
// the wildcard name, and the prefixed ones whose name starts it.
type Filter struct {
	Type       ResourceType
	Name       *string
	Pattern    PatternType
	Principal  *string
	Host       *string
	Operation  Operation
	Permission Permission
}

// Kafka's delegation token and user resource types and token operations: valid in a
// filter (they match nothing here), never stored.
const (
	resourceUser     ResourceType = 7
	opDescribeTokens Operation    = 14
)

// Check says whether the filter is one Kafka accepts: no unknown value.
func (f Filter) Check() error {
	switch {
	case f.Type < ResourceAny || f.Type > resourceUser:
		return fmt.Errorf("unknown resource type %d in the filter", f.Type)
	case f.Pattern < PatternAny || f.Pattern > PatternPrefixed:
		return fmt.Errorf("unknown pattern type %d in the filter", f.Pattern)
	case f.Operation < OpAny || f.Operation > opDescribeTokens:
		return fmt.Errorf("unknown operation %d in the filter", f.Operation)
	case f.Permission < PermissionAny || f.Permission > Allow:
		return fmt.Errorf("unknown permission %d in the filter", f.Permission)
	}
	return nil
}

// Matches says whether b passes the filter.
func (f Filter) Matches(b Binding) bool {
	switch {
	case f.Type != ResourceAny && f.Type != b.Type:
		return false
	case f.Operation != OpAny && f.Operation != b.Operation:
		return false
	case f.Permission != PermissionAny && f.Permission != b.Permission:
		return false
	case f.Principal != nil && *f.Principal != b.Principal:
		return false
	case f.Host != nil && *f.Host != b.Host:
		return false
	}
	return f.matchesPattern(b)
}

func (f Filter) matchesPattern(b Binding) bool {
	switch f.Pattern {
	case PatternLiteral, PatternPrefixed:
		return f.Pattern == b.Pattern && (f.Name == nil || *f.Name == b.Name)
	case PatternAny:
		return f.Name == nil || *f.Name == b.Name
	case PatternMatch:
		if f.Name == nil {
			return true
		}
		if b.Pattern == PatternPrefixed {
			return strings.HasPrefix(*f.Name, b.Name)
		}
		return b.Name == *f.Name || b.Name == Wildcard
	default:
		return false
	}
}

// Select returns the bindings of s that pass f, in Sorted order.
func (s *Set) Select(f Filter) []Binding {
	var out []Binding
	for _, b := range s.Sorted() {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}
