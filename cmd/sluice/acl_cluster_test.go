package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/runtime"
)

// Issue 10: ACL and quota changes sent to a node that does not lead the metadata quorum
// are forwarded to the controller's node and succeed, and the controller has them
// committed when the client is answered. The CLI's client may pick any node; the
// direct requests go to a non-leader by id.
func TestACLAndQuotaChangesThroughANonLeaderNode(t *testing.T) {
	nodes := startThreeNodeCluster(t, withAuthorizer)
	var leader *runtime.Node
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			n.ControllerImage(func(_ *meta.Image, active bool) {
				if active {
					leader = n
				}
			})
		}
		return leader != nil
	}, 10*time.Second, 20*time.Millisecond)
	var other *runtime.Node
	var otherID int32
	for i, n := range nodes {
		if n != leader {
			other, otherID = n, int32(i+1)
			break
		}
	}
	leaderACLs := func() int {
		count := 0
		leader.ControllerImage(func(im *meta.Image, _ bool) { count = im.ACLs().Len() })
		return count
	}

	addr := other.Addr()
	out, _ := cli(t, addr, 0, "", "acl", "add", "--allow-principal", "User:bob",
		"--operation", "read", "--topic", "orders")
	require.Contains(t, out, "added ALLOW User:bob from * READ on TOPIC orders (LITERAL)")
	require.Equal(t, 1, leaderACLs(), "committed before the answer")
	out, _ = cli(t, addr, 0, "", "quota", "set", "--user", "bob", "producer_byte_rate=1024")
	require.Contains(t, out, "updated quotas of {user=bob}")

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ca := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName = kmsg.ACLResourceTypeGroup, "etl"
	c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host = "User:alice", "*"
	c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	ca.Creations = []kmsg.CreateACLsRequestCreation{c}
	resp, err := cl.Broker(int(otherID)).Request(ctx, ca)
	require.NoError(t, err)
	cr := resp.(*kmsg.CreateACLsResponse)
	require.Len(t, cr.Results, 1)
	require.Zero(t, cr.Results[0].ErrorCode, "%v", cr.Results[0].ErrorMessage)
	require.Equal(t, 2, leaderACLs())

	aq := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id",
		Name: kmsg.StringPtr("etl")}}
	e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "consumer_byte_rate",
		Value: 2048}}
	aq.Entries = []kmsg.AlterClientQuotasRequestEntry{e}
	resp, err = cl.Broker(int(otherID)).Request(ctx, aq)
	require.NoError(t, err)
	qr := resp.(*kmsg.AlterClientQuotasResponse)
	require.Len(t, qr.Entries, 1)
	require.Zero(t, qr.Entries[0].ErrorCode, "%v", qr.Entries[0].ErrorMessage)
	leader.ControllerImage(func(im *meta.Image, _ bool) {
		v, ok := im.Quota(meta.QuotaEntity{ClientID: meta.QuotaName{Set: true,
			Name: "etl"}}, "consumer_byte_rate")
		require.True(t, ok)
		require.Equal(t, 2048.0, v)
	})

	dl := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny,
		kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dl.Filters = []kmsg.DeleteACLsRequestFilter{f}
	resp, err = cl.Broker(int(otherID)).Request(ctx, dl)
	require.NoError(t, err)
	dr := resp.(*kmsg.DeleteACLsResponse)
	require.Len(t, dr.Results, 1)
	require.Zero(t, dr.Results[0].ErrorCode)
	require.Len(t, dr.Results[0].MatchingACLs, 2)
	require.Zero(t, leaderACLs())
	// The forwarding node applies the records with the metadata log.
	require.Eventually(t, func() bool {
		out, _ := cli(t, addr, 0, "", "acl", "list")
		return strings.Contains(out, "no ACLs")
	}, 10*time.Second, 50*time.Millisecond)
}
