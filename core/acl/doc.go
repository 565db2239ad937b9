// Package acl holds Kafka's access control lists and the authorizer that reads them.
//
// A Binding is one ACL as Kafka's CreateAcls carries it: a resource pattern (type,
// name, literal or prefixed), a principal, a host, an operation and allow or deny. The
// numbers of the enumerations are Kafka's (and kmsg's), and part of the on-disk format:
// bindings are stored in the replicated metadata (core/meta). Filter is what
// DescribeAcls and DeleteAcls match with. Authorizer decides one request on a Set of
// bindings the way Kafka's StandardAuthorizer does: super users pass, a matching deny
// wins over any allow, DESCRIBE is implied by READ, WRITE, DELETE and ALTER, and
// DESCRIBE_CONFIGS by ALTER_CONFIGS; a resource no binding names is allowed only with
// allow.everyone.if.no.acl.found.
//
// The package is pure: no clock, no I/O.
package acl
