package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

// The ACL APIs where Sluice once answered unlike Kafka, and the request shapes the
// audit checked (docs/security.md "ACLs", "Where Sluice differs from Kafka").

// Without an authorizer Kafka answers the three ACL APIs SECURITY_DISABLED: an ACL
// stored there would decide nothing.
func TestACLAPIsWithoutAnAuthorizerAreSecurityDisabled(t *testing.T) {
	h := newHarness(t)
	require.Equal(t, []int16{kerr.SecurityDisabled.Code, kerr.SecurityDisabled.Code},
		h.createACLs("",
			creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpRead, acl.Allow),
			creation(acl.ResourceAny, "t", acl.PatternLiteral, bob, acl.OpRead, acl.Allow)))
	require.Zero(t, h.b.image.ACLs().Len(), "nothing stored")
	require.Equal(t, kerr.SecurityDisabled.Code, h.describeACLs("", nil).ErrorCode)
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = maxVersion(kmsg.DeleteACLs)
	del.Filters = []kmsg.DeleteACLsRequestFilter{anyFilter(), anyFilter()}
	dr := h.doAs("", del).(*kmsg.DeleteACLsResponse)
	require.Len(t, dr.Results, 2)
	for _, r := range dr.Results {
		require.Equal(t, kerr.SecurityDisabled.Code, r.ErrorCode)
		require.Empty(t, r.MatchingACLs)
	}
}

// KIP-679 through InitProducerId: with allow.everyone.if.no.acl.found, a principal
// without IDEMPOTENT_WRITE (the cluster has an ACL, for someone else) may still produce
// idempotently while some topic has no ACL, however many others have one.
func TestIdempotentProducerUnderAllowEveryone(t *testing.T) {
	h := newHarness(t, withAuthz, func(c *Config) { c.Authz.AllowIfNoACL = true })
	require.Equal(t, []int16{0, 0}, h.createACLs(admin,
		creation(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, bob, acl.OpAlter,
			acl.Allow),
		creation(acl.ResourceTopic, "secret", acl.PatternLiteral, bob, acl.OpAll, acl.Allow)))
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = maxVersion(kmsg.InitProducerID)
	const carol = "User:carol"
	require.Zero(t, h.doAs(carol, ip).(*kmsg.InitProducerIDResponse).ErrorCode)

	// A deny of WRITE on every topic leaves carol no topic to write.
	require.Equal(t, []int16{0}, h.createACLs(admin, creation(acl.ResourceTopic,
		acl.Wildcard, acl.PatternLiteral, "User:*", acl.OpWrite, acl.Deny)))
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code,
		h.doAs(carol, ip).(*kmsg.InitProducerIDResponse).ErrorCode)
}

// CreateAcls: what can be stored, with Kafka's answers (Sluice answers INVALID_REQUEST
// per creation where Kafka fails the whole request or closes the connection).
func TestCreateACLsValidation(t *testing.T) {
	h := newHarness(t, withAuthz)
	ok := []kmsg.CreateACLsRequestCreation{
		creation(acl.ResourceCluster, acl.ClusterName, acl.PatternPrefixed, bob, acl.OpAlter,
			acl.Allow), // Kafka checks the cluster's name only
		creation(acl.ResourceTopic, acl.Wildcard, acl.PatternPrefixed, "User:*",
			acl.OpRead, acl.Allow), // Kafka refuses neither: a PREFIXED * is not a wildcard
		creation(acl.ResourceTopic, acl.Wildcard, acl.PatternPrefixed, "User:*",
			acl.OpRead, acl.Deny),
	}
	bad := []kmsg.CreateACLsRequestCreation{
		creation(acl.ResourceCluster, "kafka", acl.PatternPrefixed, bob, acl.OpAlter, acl.Allow),
		creation(acl.ResourceCluster, acl.Wildcard, acl.PatternLiteral, bob, acl.OpAlter,
			acl.Allow),
		creation(acl.ResourceAny, "t", acl.PatternLiteral, bob, acl.OpRead, acl.Allow),
		creation(acl.ResourceUnknown, "t", acl.PatternLiteral, bob, acl.OpRead, acl.Allow),
		creation(acl.ResourceTopic, "t", acl.PatternMatch, bob, acl.OpRead, acl.Allow),
		creation(acl.ResourceTopic, "t", acl.PatternAny, bob, acl.OpRead, acl.Allow),
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpAny, acl.Allow),
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpRead,
			acl.PermissionAny),
		creation(acl.ResourceTopic, "", acl.PatternLiteral, bob, acl.OpRead, acl.Allow),
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, "bob", acl.OpRead, acl.Allow),
	}
	codes := h.createACLs(admin, append(append([]kmsg.CreateACLsRequestCreation{}, ok...),
		bad...)...)
	for i, c := range codes {
		want := kerr.InvalidRequest.Code
		if i < len(ok) {
			want = 0
		}
		require.Equal(t, want, c, "creation %d", i)
	}
	require.Equal(t, len(ok), h.b.image.ACLs().Len(), "the valid ones are created")
	// The cluster's PREFIXED binding decides the cluster: bob may create ACLs.
	require.Equal(t, []int16{0}, h.createACLs(bob, creation(acl.ResourceGroup, "g",
		acl.PatternLiteral, bob, acl.OpRead, acl.Allow)))
}

// The ACL APIs themselves: DescribeAcls needs DESCRIBE on the cluster (which ALTER
// implies), CreateAcls and DeleteAcls ALTER.
func TestACLAPIsNeedDescribeOrAlterOnTheCluster(t *testing.T) {
	h := newHarness(t, withAuthz)
	const carol = "User:carol"
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = maxVersion(kmsg.DeleteACLs)
	f := anyFilter()
	f.Principal = strp("User:nobody")
	del.Filters = []kmsg.DeleteACLsRequestFilter{f}
	deleteCode := func(as string) int16 {
		return h.doAs(as, del).(*kmsg.DeleteACLsResponse).Results[0].ErrorCode
	}
	topic := creation(acl.ResourceTopic, "t", acl.PatternLiteral, carol, acl.OpRead, acl.Allow)
	refused := kerr.ClusterAuthorizationFailed.Code
	require.Equal(t, refused, h.describeACLs(bob, nil).ErrorCode)
	require.Equal(t, []int16{refused}, h.createACLs(bob, topic))
	require.Equal(t, refused, deleteCode(bob))

	require.Equal(t, []int16{0, 0}, h.createACLs(admin,
		creation(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, bob,
			acl.OpDescribe, acl.Allow),
		creation(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, carol, acl.OpAlter,
			acl.Allow)))
	require.Zero(t, h.describeACLs(bob, nil).ErrorCode)
	require.Equal(t, []int16{refused}, h.createACLs(bob, topic), "DESCRIBE is not ALTER")
	require.Equal(t, refused, deleteCode(bob))
	require.Zero(t, h.describeACLs(carol, nil).ErrorCode, "ALTER implies DESCRIBE")
	require.Equal(t, []int16{0}, h.createACLs(carol, topic))
	require.Zero(t, deleteCode(carol))
}

// DescribeAcls and DeleteAcls filters: null name, principal and host match any; ANY
// matches every pattern type with the exact name; MATCH every binding that applies
// to the name; a filter with an UNKNOWN value is INVALID_REQUEST.
func TestACLFilters(t *testing.T) {
	h := newHarness(t, withAuthz)
	require.Equal(t, []int16{0, 0, 0, 0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "orders", acl.PatternLiteral, bob, acl.OpRead, acl.Allow),
		creation(acl.ResourceTopic, "ord", acl.PatternPrefixed, bob, acl.OpWrite, acl.Deny),
		creation(acl.ResourceTopic, acl.Wildcard, acl.PatternLiteral, "User:carol",
			acl.OpRead, acl.Allow),
		creation(acl.ResourceTopic, "orders", acl.PatternPrefixed, bob, acl.OpRead,
			acl.Allow)))
	describe := func(pat kmsg.ACLResourcePatternType, name, principal *string) int {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.Version = maxVersion(kmsg.DescribeACLs)
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, pat
		req.ResourceName, req.Principal = name, principal
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp := h.doAs(admin, req).(*kmsg.DescribeACLsResponse)
		require.Zero(t, resp.ErrorCode)
		n := 0
		for _, r := range resp.Resources {
			n += len(r.ACLs)
		}
		return n
	}
	orders := strp("orders")
	require.Equal(t, 4, describe(kmsg.ACLResourcePatternTypeAny, nil, nil))
	require.Equal(t, 2, describe(kmsg.ACLResourcePatternTypeAny, orders, nil),
		"ANY: the exact name, literal and prefixed")
	require.Equal(t, 4, describe(kmsg.ACLResourcePatternTypeMatch, orders, nil),
		"MATCH: the literal, the wildcard and both prefixes")
	require.Equal(t, 2, describe(kmsg.ACLResourcePatternTypeMatch, strp("ord"), nil),
		"MATCH ord: the wildcard and the prefix ord (orders is longer)")
	require.Equal(t, 1, describe(kmsg.ACLResourcePatternTypeLiteral, orders, nil))
	require.Equal(t, 2, describe(kmsg.ACLResourcePatternTypePrefixed, nil, nil))
	require.Equal(t, 1, describe(kmsg.ACLResourcePatternTypeMatch, orders, strp("User:carol")))

	bad := kmsg.NewPtrDescribeACLsRequest()
	bad.Version = maxVersion(kmsg.DescribeACLs)
	bad.ResourceType, bad.ResourcePatternType = kmsg.ACLResourceTypeAny,
		kmsg.ACLResourcePatternTypeAny
	bad.Operation, bad.PermissionType = kmsg.ACLOperationUnknown, kmsg.ACLPermissionTypeAny
	require.Equal(t, kerr.InvalidRequest.Code,
		h.doAs(admin, bad).(*kmsg.DescribeACLsResponse).ErrorCode)

	// DeleteAcls with MATCH removes what applies to orders, and lists each binding it
	// removed, each with no error.
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = maxVersion(kmsg.DeleteACLs)
	f := anyFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeTopic,
		kmsg.ACLResourcePatternTypeMatch
	f.ResourceName, f.Principal = orders, strp(bob)
	del.Filters = []kmsg.DeleteACLsRequestFilter{f}
	dr := h.doAs(admin, del).(*kmsg.DeleteACLsResponse)
	require.Zero(t, dr.Results[0].ErrorCode)
	require.Len(t, dr.Results[0].MatchingACLs, 3)
	for _, m := range dr.Results[0].MatchingACLs {
		require.Zero(t, m.ErrorCode)
		require.Equal(t, bob, m.Principal)
	}
	require.Equal(t, 1, h.b.image.ACLs().Len(), "carol's wildcard binding stays")
}
