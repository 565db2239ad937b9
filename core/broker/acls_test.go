package broker

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

const admin, bob = "User:admin", "User:bob"

// withAuthz turns the authorizer on with admin as a super user, and the harness's own
// anonymous requests (mustCreate...).
func withAuthz(c *Config) {
	c.Authz = AuthzConfig{Enabled: true, ClassName: "sluice",
		SuperUsers: []string{admin, acl.Anonymous}}
}

// doAs sends req as principal on conn and returns its answer.
func (h *harness) doAs(principal string, req kmsg.Request) kmsg.Response {
	h.t.Helper()
	id, ok := h.sendAs(7, principal, "c", req)
	require.True(h.t, ok, "no answer to %T", req)
	return h.env.replies[id].Msg
}

func creation(t acl.ResourceType, name string, pat acl.PatternType, principal string,
	op acl.Operation, perm acl.Permission) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName = kmsg.ACLResourceType(t), name
	c.ResourcePatternType = kmsg.ACLResourcePatternType(pat)
	c.Principal, c.Host = principal, "*"
	c.Operation, c.PermissionType = kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
	return c
}

func (h *harness) createACLs(as string, cs ...kmsg.CreateACLsRequestCreation) []int16 {
	h.t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version, req.Creations = maxVersion(kmsg.CreateACLs), cs
	resp := h.doAs(as, req).(*kmsg.CreateACLsResponse)
	require.Len(h.t, resp.Results, len(cs))
	codes := make([]int16, len(cs))
	for i, r := range resp.Results {
		codes[i] = r.ErrorCode
	}
	return codes
}

func anyFilter() kmsg.DeleteACLsRequestFilter {
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return f
}

func (h *harness) describeACLs(as string, topic *string) *kmsg.DescribeACLsResponse {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.Version = maxVersion(kmsg.DescribeACLs)
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny,
		kmsg.ACLResourcePatternTypeMatch
	if topic != nil {
		req.ResourceType = kmsg.ACLResourceTypeTopic
	}
	req.ResourceName = topic
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return h.doAs(as, req).(*kmsg.DescribeACLsResponse)
}

func TestACLsCreateDescribeDeleteAndSurviveRestart(t *testing.T) {
	h := newHarness(t, withAuthz)
	codes := h.createACLs("",
		creation(acl.ResourceTopic, "orders", acl.PatternLiteral, bob, acl.OpRead, acl.Allow),
		creation(acl.ResourceTopic, "ord", acl.PatternPrefixed, bob, acl.OpWrite, acl.Deny),
		creation(acl.ResourceAny, "x", acl.PatternLiteral, bob, acl.OpRead, acl.Allow),
		creation(acl.ResourceCluster, "other", acl.PatternLiteral, bob, acl.OpAlter, acl.Allow),
		creation(acl.ResourceGroup, "g", acl.PatternLiteral, "bob", acl.OpRead, acl.Allow))
	require.Equal(t, []int16{0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code,
		kerr.InvalidRequest.Code}, codes)
	require.Equal(t, 2, h.b.image.ACLs().Len())

	orders := "orders"
	d := h.describeACLs("", &orders)
	require.Zero(t, d.ErrorCode)
	require.Len(t, d.Resources, 2, "MATCH orders: the literal and the prefix")

	h.restart()
	require.Equal(t, 2, h.b.image.ACLs().Len(), "ACLs are in the metadata log")
	d = h.describeACLs("", nil)
	require.Len(t, d.Resources, 2)

	req := kmsg.NewPtrDeleteACLsRequest()
	req.Version = maxVersion(kmsg.DeleteACLs)
	f := anyFilter()
	f.ResourceType = kmsg.ACLResourceTypeTopic
	f.ResourcePatternType = kmsg.ACLResourcePatternTypePrefixed
	bad := anyFilter()
	bad.ResourceType = kmsg.ACLResourceTypeUnknown
	req.Filters = []kmsg.DeleteACLsRequestFilter{f, bad}
	dr := h.doAs("", req).(*kmsg.DeleteACLsResponse)
	require.Len(t, dr.Results, 2)
	require.Zero(t, dr.Results[0].ErrorCode)
	require.Len(t, dr.Results[0].MatchingACLs, 1)
	require.Equal(t, "ord", dr.Results[0].MatchingACLs[0].ResourceName)
	require.Equal(t, kerr.InvalidRequest.Code, dr.Results[1].ErrorCode)
	h.restart()
	require.Equal(t, 1, h.b.image.ACLs().Len())
}

func TestAuthorizerProduceFetchAndMetadataFollowACLChanges(t *testing.T) {
	h := newHarness(t, withAuthz, func(c *Config) { c.NumPartitions = 1 })
	h.mustCreate("t", 1)
	// Without ACLs (allow.everyone.if.no.acl.found=false) bob may do nothing.
	pp := producePart(t, h.doAs(bob, produceReq(-1, "t", 0, values("a"))))
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, pp.ErrorCode)
	md := h.doAs(bob, kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	require.Empty(t, md.Topics, "topics bob may not describe are not listed")
	require.Equal(t, []int16{kerr.ClusterAuthorizationFailed.Code},
		h.createACLs(bob, creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob,
			acl.OpAll, acl.Allow)))

	// The super user grants WRITE and READ; bob's next requests are served.
	require.Equal(t, []int16{0, 0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpWrite, acl.Allow),
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpRead, acl.Allow)))
	pp = producePart(t, h.doAs(bob, produceReq(-1, "t", 0, values("a"))))
	require.Zero(t, pp.ErrorCode)
	fp := fetchPart(t, h.doAs(bob, fetchReq("t", 0, 0, 0, 1)))
	require.Zero(t, fp.ErrorCode)
	require.NotEmpty(t, fp.RecordBatches)
	md = h.doAs(bob, kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	require.Len(t, md.Topics, 1, "WRITE implies DESCRIBE")

	// A deny wins; removing the allows refuses bob again at once.
	require.Equal(t, []int16{0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternPrefixed, bob, acl.OpRead, acl.Deny)))
	fp = fetchPart(t, h.doAs(bob, fetchReq("t", 0, 0, 0, 1)))
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, fp.ErrorCode)
	require.Empty(t, fp.RecordBatches)
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Version = maxVersion(kmsg.DeleteACLs)
	req.Filters = []kmsg.DeleteACLsRequestFilter{anyFilter()}
	dr := h.doAs(admin, req).(*kmsg.DeleteACLsResponse)
	require.Len(t, dr.Results[0].MatchingACLs, 3)
	pp = producePart(t, h.doAs(bob, produceReq(-1, "t", 0, values("b"))))
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, pp.ErrorCode)
	// The super user is never refused.
	pp = producePart(t, h.doAs(admin, produceReq(-1, "t", 0, values("c"))))
	require.Zero(t, pp.ErrorCode)
}

func TestAuthorizerGroupsAutoCreateAndIdempotence(t *testing.T) {
	h := newHarness(t, withAuthz)
	h.mustCreate("t", 1)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = maxVersion(kmsg.JoinGroup), "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10_000, 10_000
	jr := h.doAs(bob, join).(*kmsg.JoinGroupResponse)
	require.Equal(t, kerr.GroupAuthorizationFailed.Code, jr.ErrorCode)

	// Auto-creation needs CREATE: bob may describe every topic, not create one.
	require.Equal(t, []int16{0}, h.createACLs(admin, creation(acl.ResourceTopic, "*",
		acl.PatternLiteral, bob, acl.OpDescribe, acl.Allow)))
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.AllowAutoTopicCreation = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = strp("auto")
	mreq.Topics = append(mreq.Topics, mt)
	md := h.doAs(bob, mreq).(*kmsg.MetadataResponse)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, md.Topics[0].ErrorCode)
	require.Nil(t, h.b.image.Topic("auto"))

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.Version = maxVersion(kmsg.InitProducerID)
	ir := h.doAs(bob, ip).(*kmsg.InitProducerIDResponse)
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, ir.ErrorCode)
	require.Equal(t, []int16{0, 0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpWrite, acl.Allow),
		creation(acl.ResourceGroup, "g", acl.PatternLiteral, bob, acl.OpRead, acl.Allow)))
	ir = h.doAs(bob, ip).(*kmsg.InitProducerIDResponse)
	require.Zero(t, ir.ErrorCode, "WRITE on a topic is enough to be idempotent (KIP-679)")
	jr = h.doAs(bob, join).(*kmsg.JoinGroupResponse)
	require.NotEqual(t, kerr.GroupAuthorizationFailed.Code, jr.ErrorCode)

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = maxVersion(kmsg.ListGroups)
	require.Empty(t, h.doAs("User:carol", lg).(*kmsg.ListGroupsResponse).Groups)
}

func TestAuthorizerOffTheDefault(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	pp := producePart(t, h.doAs(bob, produceReq(-1, "t", 0, values("a"))))
	require.Zero(t, pp.ErrorCode, "no authorizer: everything is allowed, as in Kafka")
	var c Config
	c = DefaultConfig()
	require.NoError(t, c.Set("authorizer.class.name",
		"org.apache.kafka.metadata.authorizer.StandardAuthorizer"))
	require.NoError(t, c.Set("super.users", "User:admin; User:CN=ops,O=acme"))
	require.NoError(t, c.Set("allow.everyone.if.no.acl.found", "true"))
	require.True(t, c.Authz.Enabled && c.Authz.AllowIfNoACL)
	require.Equal(t, []string{"User:admin", "User:CN=ops,O=acme"}, c.Authz.SuperUsers)
	require.Error(t, c.Set("authorizer.class.name", "com.example.Mine"))
	require.Error(t, c.Set("super.users", "admin"))
}

// A follower whose fetch was answered OFFSET_OUT_OF_RANGE asks its leader for the log
// end with ListOffsets from its replica id: CLUSTER_ACTION on the cluster is what it
// needs, as for its fetches, not DESCRIBE on a topic whose ACLs name other principals
// (the simulator's ACL workload found followers refused for ever). A client's
// ListOffsets, and a replica id from a principal without CLUSTER_ACTION, still need
// DESCRIBE.
func TestFollowerListOffsetsNeedsClusterAction(t *testing.T) {
	h := newHarness(t, withAuthz, func(c *Config) { c.NumPartitions = 1 })
	h.mustCreate("t", 1)
	const peer, carol = "User:peer", "User:carol"
	require.Equal(t, []int16{0, 0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpRead, acl.Allow),
		creation(acl.ResourceCluster, acl.ClusterName, acl.PatternLiteral, peer,
			acl.OpClusterAction, acl.Allow)))
	v := maxVersion(kmsg.ListOffsets)
	require.Zero(t, listedOne(t, h.doAs(peer, listAs("t", -1, v, 2))).ErrorCode)
	require.Equal(t, kerr.TopicAuthorizationFailed.Code,
		listedOne(t, h.doAs(peer, listAs("t", -1, v, -1))).ErrorCode, "a client's needs DESCRIBE")
	require.Equal(t, kerr.TopicAuthorizationFailed.Code,
		listedOne(t, h.doAs(carol, listAs("t", -1, v, 2))).ErrorCode)
	require.Zero(t, listedOne(t, h.doAs(bob, listAs("t", -1, v, 2))).ErrorCode)
}

// TestACLRequestsAreBounded: one CreateAcls of more than maxACLsPerRequest creations,
// or one DeleteAcls whose filters match more bindings, is refused whole and writes
// nothing; at the bound both go through.
func TestACLRequestsAreBounded(t *testing.T) {
	h := newHarness(t, withAuthz)
	topics := func(from, n int) []kmsg.CreateACLsRequestCreation {
		cs := make([]kmsg.CreateACLsRequestCreation, n)
		for i := range cs {
			cs[i] = creation(acl.ResourceTopic, fmt.Sprint("t", from+i), acl.PatternLiteral,
				bob, acl.OpRead, acl.Allow)
		}
		return cs
	}
	codes := h.createACLs("", topics(0, maxACLsPerRequest+1)...)
	for _, c := range codes {
		require.Equal(t, kerr.InvalidRequest.Code, c)
	}
	require.Zero(t, h.b.image.ACLs().Len(), "nothing created")
	for _, c := range h.createACLs("", topics(0, maxACLsPerRequest)...) {
		require.Zero(t, c)
	}
	require.Equal(t, maxACLsPerRequest, h.b.image.ACLs().Len())
	require.Zero(t, h.createACLs("", topics(maxACLsPerRequest, 1)...)[0])

	del := func() *kmsg.DeleteACLsResponse {
		req := kmsg.NewPtrDeleteACLsRequest()
		req.Version = maxVersion(kmsg.DeleteACLs)
		req.Filters = []kmsg.DeleteACLsRequestFilter{anyFilter()}
		return h.doAs("", req).(*kmsg.DeleteACLsResponse)
	}
	r := del().Results[0]
	require.Equal(t, kerr.InvalidRequest.Code, r.ErrorCode, "10,001 matched")
	require.Empty(t, r.MatchingACLs)
	require.Contains(t, *r.ErrorMessage, "10001")
	require.Equal(t, maxACLsPerRequest+1, h.b.image.ACLs().Len(), "nothing deleted")

	one := anyFilter()
	one.ResourceName = kmsg.StringPtr("t0")
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Version = maxVersion(kmsg.DeleteACLs)
	req.Filters = []kmsg.DeleteACLsRequestFilter{one}
	require.Zero(t, h.doAs("", req).(*kmsg.DeleteACLsResponse).Results[0].ErrorCode)
	r = del().Results[0]
	require.Zero(t, r.ErrorCode)
	require.Len(t, r.MatchingACLs, maxACLsPerRequest)
	require.Zero(t, h.b.image.ACLs().Len())
}
