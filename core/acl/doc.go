// Package acl holds Kafka's access control lists and the authorizer that reads them.
//
// A Binding is one ACL as Kafka's CreateAcls carries it: a resource pattern (type,
// name, literal or prefixed), a principal, a host, an operation and allow or deny. The
// numbers of the enumerations are Kafka's (and kmsg's), and part of the on-disk format:
// bindings are stored in the replicated metadata (core/meta). Filter is what
// DescribeAcls and DeleteAcls match with. Authorizer decides one request on a Set of
// bindings the way Kafka's StandardAuthorizer does: super users pass, a matching deny
// wins over any allow, DESCRIBE is implied by READ, WRITE, DELETE and ALTER, and
// DESCRIBE_CONFIGS by ALTER_CONFIGS (for an allow; a deny implies nothing); a resource
// no binding covers is allowed only with allow.everyone.if.no.acl.found. User:* is the
// one wildcard principal; a binding's host is * or the client's address, compared as
// an address. Where Sluice still differs from Kafka, deliberately: docs/security.md
// ("Where Sluice differs from Kafka").
//
// The package is pure: no clock, no I/O.
package acl
