package broker

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

// opsBits is the KIP-430 bit field of ops.
func opsBits(ops ...acl.Operation) int32 {
	var b int32
	for _, op := range ops {
		b |= 1 << op
	}
	return b
}

func authzOpsMetadata(version int16, topics ...string) *kmsg.MetadataRequest {
	m := kmsg.NewPtrMetadataRequest()
	m.Version = version
	m.IncludeTopicAuthorizedOperations = true
	m.IncludeClusterAuthorizedOperations = true
	for _, name := range topics {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = strp(name)
		m.Topics = append(m.Topics, t)
	}
	return m
}

func authzOpsGroups(groups ...string) *kmsg.DescribeGroupsRequest {
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.Version = maxVersion(kmsg.DescribeGroups)
	d.Groups, d.IncludeAuthorizedOperations = groups, true
	return d
}

func authzOpsCluster() *kmsg.DescribeClusterRequest {
	d := kmsg.NewPtrDescribeClusterRequest()
	d.IncludeClusterAuthorizedOperations = true
	return d
}

// With the authorizer off a client that asks is told every operation each resource
// type supports; one that does not ask is told nothing (Kafka's math.MinInt32).
func TestAuthorizedOperationsWithoutAnAuthorizer(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	md := h.do(authzOpsMetadata(10, "t")).(*kmsg.MetadataResponse)
	require.Equal(t, opsBits(supportedOps[acl.ResourceTopic]...), md.Topics[0].AuthorizedOperations)
	require.Equal(t, opsBits(supportedOps[acl.ResourceCluster]...), md.AuthorizedOperations)
	require.EqualValues(t, 0b1101_1111_1000, md.Topics[0].AuthorizedOperations,
		"READ(3) through ALTER_CONFIGS(11), CLUSTER_ACTION(9) aside")

	plain := authzOpsMetadata(10, "t")
	plain.IncludeTopicAuthorizedOperations, plain.IncludeClusterAuthorizedOperations = false, false
	md = h.do(plain).(*kmsg.MetadataResponse)
	require.EqualValues(t, math.MinInt32, md.Topics[0].AuthorizedOperations)
	require.EqualValues(t, math.MinInt32, md.AuthorizedOperations)

	md = h.do(authzOpsMetadata(maxVersion(kmsg.Metadata), "t")).(*kmsg.MetadataResponse)
	if maxVersion(kmsg.Metadata) >= 11 {
		require.EqualValues(t, math.MinInt32, md.AuthorizedOperations,
			"from v11 the cluster's operations come from DescribeCluster")
	}
	dc := h.do(authzOpsCluster()).(*kmsg.DescribeClusterResponse)
	require.Equal(t, opsBits(supportedOps[acl.ResourceCluster]...), dc.ClusterAuthorizedOperations)
	dg := h.do(authzOpsGroups("g")).(*kmsg.DescribeGroupsResponse)
	require.Equal(t, opsBits(acl.OpRead, acl.OpDescribe, acl.OpDelete),
		dg.Groups[0].AuthorizedOperations)
}

// With the authorizer on the bits are what the principal's ACLs allow, implied
// operations included (READ and WRITE imply DESCRIBE), and they follow ACL changes.
func TestAuthorizedOperationsFollowThePrincipalsACLs(t *testing.T) {
	h := newHarness(t, withAuthz)
	h.mustCreate("t", 1)
	require.Equal(t, []int16{0, 0, 0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpWrite, acl.Allow),
		creation(acl.ResourceGroup, "g", acl.PatternLiteral, bob, acl.OpRead, acl.Allow),
		creation(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, bob,
			acl.OpIdempotentWrite, acl.Allow)))

	md := h.doAs(bob, authzOpsMetadata(10, "t")).(*kmsg.MetadataResponse)
	require.Equal(t, opsBits(acl.OpWrite, acl.OpDescribe), md.Topics[0].AuthorizedOperations)
	require.Equal(t, opsBits(acl.OpIdempotentWrite), md.AuthorizedOperations)
	dc := h.doAs(bob, authzOpsCluster()).(*kmsg.DescribeClusterResponse)
	require.Equal(t, opsBits(acl.OpIdempotentWrite), dc.ClusterAuthorizedOperations)
	dg := h.doAs(bob, authzOpsGroups("g")).(*kmsg.DescribeGroupsResponse)
	require.Equal(t, opsBits(acl.OpRead, acl.OpDescribe), dg.Groups[0].AuthorizedOperations)

	// The super user may do everything; a deny takes WRITE (and with it DESCRIBE) away.
	md = h.doAs(admin, authzOpsMetadata(10, "t")).(*kmsg.MetadataResponse)
	require.Equal(t, opsBits(supportedOps[acl.ResourceTopic]...), md.Topics[0].AuthorizedOperations)
	require.Equal(t, []int16{0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpWrite, acl.Deny)))
	md = h.doAs(bob, authzOpsMetadata(10, "t")).(*kmsg.MetadataResponse)
	require.Equal(t, opsBits(acl.OpDescribe), md.Topics[0].AuthorizedOperations,
		"the allowed WRITE still implies DESCRIBE, which the deny does not name")

	// A topic the principal may not describe is answered with an error and no bits.
	require.Equal(t, []int16{0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpDescribe, acl.Deny)))
	md = h.doAs(bob, authzOpsMetadata(10, "t")).(*kmsg.MetadataResponse)
	require.NotZero(t, md.Topics[0].ErrorCode, "bob may no longer describe t")
	require.EqualValues(t, math.MinInt32, md.Topics[0].AuthorizedOperations,
		"a refused topic carries no operations")
}
