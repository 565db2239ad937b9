package acl

import (
	"slices"
	"strings"
)

// Anonymous is the principal of a connection that did not authenticate.
const Anonymous = "User:ANONYMOUS"

// Authorizer decides requests on a Set. SuperUsers pass every check; AllowIfNoACL is
// allow.everyone.if.no.acl.found: a resource no binding covers is then allowed.
// Implicit lists principals allowed some operations on the cluster whatever the
// bindings say (a node's own inter-broker principal: CLUSTER_ACTION, CREATE).
type Authorizer struct {
	SuperUsers   map[string]bool
	AllowIfNoACL bool
	Implicit     map[string][]Operation
}

// Who is the identity a request is decided for: its principal ("" is anonymous) and
// the client's address.
type Who struct {
	Principal string
	Host      string
}

func (w Who) principal() string {
	if w.Principal == "" {
		return Anonymous
	}
	return w.Principal
}

// Authorize says whether w may do op on the resource t/name, Kafka's rules in order:
// a super user may; a resource no binding covers is allowed exactly when AllowIfNoACL;
// a deny binding matching w and op (or ALL) refuses, whatever allows; an allow binding
// matching w and op, ALL, or an operation implying op (DESCRIBE by READ, WRITE,
// DELETE, ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS) allows; else refused.
func (a *Authorizer) Authorize(s *Set, w Who, op Operation, t ResourceType,
	name string) bool {
	p := w.principal()
	if a.SuperUsers[p] || t == ResourceCluster && slices.Contains(a.Implicit[p], op) {
		return true
	}
	bs := s.Matching(t, name)
	if len(bs) == 0 {
		return a.AllowIfNoACL
	}
	allowed := false
	for _, b := range bs {
		if !b.appliesTo(p, w.Host) {
			continue
		}
		switch {
		case b.Permission == Deny && (b.Operation == op || b.Operation == OpAll):
			return false
		case b.Permission == Allow && grants(b.Operation, op):
			allowed = true
		}
	}
	return allowed
}

// appliesTo says whether the binding's principal and host cover p from host.
func (b Binding) appliesTo(p, host string) bool {
	if b.Principal != p && !(wildcardPrincipal(b.Principal) && sameType(b.Principal, p)) {
		return false
	}
	return b.Host == Wildcard || b.Host == host
}

func wildcardPrincipal(p string) bool { return strings.HasSuffix(p, ":"+Wildcard) }

func sameType(wild, p string) bool {
	t, _, _ := strings.Cut(wild, ":")
	pt, _, _ := strings.Cut(p, ":")
	return t == pt
}

// grants says whether an allow binding of operation have permits op.
func grants(have, op Operation) bool {
	switch {
	case have == op || have == OpAll:
		return true
	case op == OpDescribe:
		return have == OpRead || have == OpWrite || have == OpDelete || have == OpAlter
	case op == OpDescribeConfigs:
		return have == OpAlterConfigs
	}
	return false
}

// AuthorizeAnyOfType says whether w may do op on at least one resource of type t
// (KIP-679: an idempotent producer needs WRITE on some topic when it lacks
// IDEMPOTENT_WRITE on the cluster). It holds for a super user; with AllowIfNoACL when
// no binding of the type exists; otherwise when an allow binding for w and op (or
// ALL) is not cancelled by a deny for w and op (or ALL) on the wildcard name, on its
// own literal name, or on a prefix of its name.
func (a *Authorizer) AuthorizeAnyOfType(s *Set, w Who, op Operation, t ResourceType) bool {
	p := w.principal()
	if a.SuperUsers[p] {
		return true
	}
	bs := s.OfType(t)
	if len(bs) == 0 {
		return a.AllowIfNoACL
	}
	var denies []Binding
	for _, b := range bs {
		if b.Permission == Deny && b.appliesTo(p, w.Host) &&
			(b.Operation == op || b.Operation == OpAll) {
			denies = append(denies, b)
		}
	}
	for _, b := range bs {
		if b.Permission != Allow || !b.appliesTo(p, w.Host) ||
			!(b.Operation == op || b.Operation == OpAll) {
			continue
		}
		if !cancelled(b, denies) {
			return true
		}
	}
	return false
}

func cancelled(allow Binding, denies []Binding) bool {
	for _, d := range denies {
		switch {
		case d.Pattern == PatternLiteral && d.Name == Wildcard:
			return true
		case d.Pattern == PatternLiteral && allow.Pattern == PatternLiteral &&
			d.Name == allow.Name:
			return true
		case d.Pattern == PatternPrefixed && strings.HasPrefix(allow.Name, d.Name):
			return true
		}
	}
	return false
}
