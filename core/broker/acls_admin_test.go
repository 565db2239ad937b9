package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

// An incremental fetch session keeps its partitions: once bob's READ is deleted, the
// next incremental fetch (naming no partition) answers them TOPIC_AUTHORIZATION_FAILED
// and carries no records.
func TestAuthorizerRefusesASessionsPartitionsAfterRevocation(t *testing.T) {
	h := newHarness(t, withAuthz)
	h.mustCreate("t", 1)
	require.Zero(t, producePart(t, h.do(produceReq(-1, "t", 0, values("a")))).ErrorCode)
	require.Equal(t, []int16{0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpRead, acl.Allow)))
	fr := h.doAs(bob, sessionFetch(0, 0, "t", map[int32]int64{0: 0})).(*kmsg.FetchResponse)
	require.NotZero(t, fr.SessionID)
	require.NotEmpty(t, fr.Topics[0].Partitions[0].RecordBatches)

	req := kmsg.NewPtrDeleteACLsRequest()
	req.Version = maxVersion(kmsg.DeleteACLs)
	req.Filters = []kmsg.DeleteACLsRequestFilter{anyFilter()}
	h.doAs(admin, req)
	require.Zero(t, producePart(t, h.do(produceReq(-1, "t", 0, values("b")))).ErrorCode)
	fr = h.doAs(bob, sessionFetch(fr.SessionID, 1, "t", nil)).(*kmsg.FetchResponse)
	require.Len(t, fr.Topics, 1)
	p := fr.Topics[0].Partitions[0]
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, p.ErrorCode)
	require.Empty(t, p.RecordBatches)
}

// The admin APIs: refused items are answered with their error beside the served ones.
func TestAuthorizerAdminRequestsPerItem(t *testing.T) {
	h := newHarness(t, withAuthz)
	h.mustCreate("mine", 1)
	h.mustCreate("theirs", 1)
	require.Equal(t, []int16{0, 0, 0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "mine", acl.PatternLiteral, bob, acl.OpAll, acl.Allow),
		creation(acl.ResourceTopic, "new-", acl.PatternPrefixed, bob, acl.OpCreate, acl.Allow),
		creation(acl.ResourceGroup, "g", acl.PatternLiteral, bob, acl.OpDescribe, acl.Allow)))

	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version, ct.TimeoutMillis = maxVersion(kmsg.CreateTopics), 5000
	ct.Topics = []kmsg.CreateTopicsRequestTopic{ctTopic("new-a", 1, -1),
		ctTopic("other", 1, -1)}
	cr := h.doAs(bob, ct).(*kmsg.CreateTopicsResponse)
	codes := map[string]int16{}
	for _, t := range cr.Topics {
		codes[t.Topic] = t.ErrorCode
	}
	require.Equal(t, map[string]int16{"new-a": 0,
		"other": kerr.TopicAuthorizationFailed.Code}, codes)
	require.Nil(t, h.b.image.Topic("other"))

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Version = maxVersion(kmsg.DescribeConfigs)
	for _, name := range []string{"mine", "theirs"} {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, name
		dc.Resources = append(dc.Resources, r)
	}
	dr := h.doAs(bob, dc).(*kmsg.DescribeConfigsResponse)
	require.Zero(t, dr.Resources[0].ErrorCode)
	require.NotEmpty(t, dr.Resources[0].Configs)
	require.Equal(t, kerr.TopicAuthorizationFailed.Code, dr.Resources[1].ErrorCode)
	require.Empty(t, dr.Resources[1].Configs)

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version, del.TimeoutMillis = 5, 5000
	del.TopicNames = []string{"theirs", "mine"}
	delr := h.doAs(bob, del).(*kmsg.DeleteTopicsResponse)
	require.Len(t, delr.Topics, 2)
	for _, dt := range delr.Topics {
		if *dt.Topic == "theirs" {
			require.Equal(t, kerr.TopicAuthorizationFailed.Code, dt.ErrorCode)
		} else {
			require.Zero(t, dt.ErrorCode)
		}
	}
	require.NotNil(t, h.b.image.Topic("theirs"))
	require.Nil(t, h.b.image.Topic("mine"))

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version, of.Group = 7, "other-group"
	ofr := h.doAs(bob, of).(*kmsg.OffsetFetchResponse)
	require.Equal(t, kerr.GroupAuthorizationFailed.Code, ofr.ErrorCode)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version, dg.Groups = maxVersion(kmsg.DescribeGroups), []string{"g", "h"}
	dgr := h.doAs(bob, dg).(*kmsg.DescribeGroupsResponse)
	require.NotEqual(t, kerr.GroupAuthorizationFailed.Code, dgr.Groups[0].ErrorCode)
	require.Equal(t, kerr.GroupAuthorizationFailed.Code, dgr.Groups[1].ErrorCode)
}

// Moving partitions is the cluster's business: AlterPartitionReassignments needs ALTER
// and ListPartitionReassignments DESCRIBE on the cluster, as in Kafka; a principal
// without them is refused whole, a super user gets past the authorizer (this node has
// no quorum, so it answers as a node without one does).
func TestAuthorizerGuardsPartitionReassignments(t *testing.T) {
	h := newHarness(t, withAuthz)
	h.mustCreate("t", 1)
	alter := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	alter.Version, alter.TimeoutMillis = 0, 5000
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = "t"
	ap := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	ap.Replicas = []int32{1}
	at.Partitions = append(at.Partitions, ap)
	alter.Topics = append(alter.Topics, at)
	list := kmsg.NewPtrListPartitionReassignmentsRequest()

	denied := kerr.ClusterAuthorizationFailed.Code
	require.Equal(t, denied,
		h.doAs(bob, alter).(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode)
	require.Equal(t, denied,
		h.doAs(bob, list).(*kmsg.ListPartitionReassignmentsResponse).ErrorCode)
	require.NotEqual(t, denied,
		h.doAs(admin, alter).(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode)
	require.NotEqual(t, denied,
		h.doAs(admin, list).(*kmsg.ListPartitionReassignmentsResponse).ErrorCode)
	require.Equal(t, []int16{0, 0}, h.createACLs(admin,
		creation(acl.ResourceCluster, "kafka-cluster", acl.PatternLiteral, bob, acl.OpAlter,
			acl.Allow),
		creation(acl.ResourceCluster, "kafka-cluster", acl.PatternLiteral, bob,
			acl.OpDescribe, acl.Allow)))
	require.NotEqual(t, denied,
		h.doAs(bob, list).(*kmsg.ListPartitionReassignmentsResponse).ErrorCode)
}

// Unregistering a broker needs ALTER on the cluster (or CLUSTER_ACTION, which a peer
// forwarding the request has): a principal without either is refused whole; granted
// ALTER, it gets past the authorizer to the node's answer (no quorum here:
// INVALID_REQUEST).
func TestAuthorizerGuardsUnregisterBroker(t *testing.T) {
	h := newHarness(t, withAuthz)
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = 4
	code := func(who string) int16 {
		return h.doAs(who, req).(*kmsg.UnregisterBrokerResponse).ErrorCode
	}
	denied := kerr.ClusterAuthorizationFailed.Code
	require.Equal(t, denied, code(bob))
	require.Equal(t, kerr.InvalidRequest.Code, code(admin))
	require.Equal(t, []int16{0}, h.createACLs(admin,
		creation(acl.ResourceCluster, "kafka-cluster", acl.PatternLiteral, bob, acl.OpAlter,
			acl.Allow)))
	require.Equal(t, kerr.InvalidRequest.Code, code(bob))
}
