package acl

import (
	"net/netip"
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
	return a.decide(s.Matching(t, name), p, w.Host, op)
}

// decide applies the bindings covering a resource (bs) to p from host doing op.
func (a *Authorizer) decide(bs []Binding, p, host string, op Operation) bool {
	if len(bs) == 0 {
		return a.AllowIfNoACL
	}
	allowed := false
	for _, b := range bs {
		if !b.appliesTo(p, host) {
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

// WildcardPrincipal is the principal of a binding that applies to every principal.
// As in Kafka it is the only wildcard, and it covers principals of any type.
const WildcardPrincipal = "User:" + Wildcard

// appliesTo says whether the binding's principal and host cover p from host.
func (b Binding) appliesTo(p, host string) bool {
	if b.Principal != p && b.Principal != WildcardPrincipal {
		return false
	}
	return b.Host == Wildcard || sameHost(b.Host, host)
}

// sameHost says whether a binding's host names the client's address. Addresses are
// compared as addresses, so that an IPv6 host matches however it is written (Kafka's
// own form is uncompressed, 0:0:0:0:0:0:0:1; a Go client address prints as ::1), and
// an IPv4 address matches its IPv4-mapped IPv6 form.
func sameHost(bindingHost, client string) bool {
	if bindingHost == client {
		return true
	}
	x, err1 := netip.ParseAddr(bindingHost)
	y, err2 := netip.ParseAddr(client)
	return err1 == nil && err2 == nil && x.Unmap() == y.Unmap()
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
// IDEMPOTENT_WRITE on the cluster), as Kafka decides it. First as Authorize would on a
// resource no binding names: a super user may; with no binding on the wildcard name,
// exactly when AllowIfNoACL (whatever other names have); else the wildcard name's
// bindings decide. Failing that, a deny for w and op (or ALL) on the wildcard name
// refuses; an allow for w and op (or ALL) on a name allows unless a deny cancels it:
// one on the same literal name, or a prefixed one that starts its name.
func (a *Authorizer) AuthorizeAnyOfType(s *Set, w Who, op Operation, t ResourceType) bool {
	p := w.principal()
	if a.SuperUsers[p] || a.decide(s.literal[resKey{t, Wildcard}], p, w.Host, op) {
		return true
	}
	var allows, denies []Binding
	for _, b := range s.OfType(t) {
		if !b.appliesTo(p, w.Host) || !(b.Operation == op || b.Operation == OpAll) {
			continue
		}
		if b.Permission == Deny {
			if b.Pattern == PatternLiteral && b.Name == Wildcard {
				return false
			}
			denies = append(denies, b)
		} else if b.Permission == Allow {
			allows = append(allows, b)
		}
	}
	for _, b := range allows {
		if !cancelled(b, denies) {
			return true
		}
	}
	return false
}

// cancelled says whether an allow is met by a deny (none on the wildcard name, which
// refuses outright; and an allow on the wildcard name allowed already): a literal
// allow by a literal deny of its name; any allow by a prefixed deny that starts its
// name.
func cancelled(allow Binding, denies []Binding) bool {
	for _, d := range denies {
		switch {
		case d.Pattern == PatternLiteral && allow.Pattern == PatternLiteral &&
			d.Name == allow.Name:
			return true
		case d.Pattern == PatternPrefixed && strings.HasPrefix(allow.Name, d.Name):
			return true
		}
	}
	return false
}
