package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// startACLNode starts a node over dir with one SASL_PLAINTEXT listener (PLAIN users
// admin and bob) and the authorizer on, admin its super user.
func startACLNode(t *testing.T, dir, users string) *runtime.Node {
	t.Helper()
	cfg := broker.DefaultConfig()
	require.NoError(t, cfg.Set("authorizer.class.name",
		"org.apache.kafka.metadata.authorizer.StandardAuthorizer"))
	require.NoError(t, cfg.Set("super.users", "User:admin"))
	n := runtime.NewNode(runtime.Options{
		Listeners: []runtime.Listener{{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0",
			Protocol: kafkanet.SASLPlaintext,
			SASL:     kafkanet.SASLSettings{Mechanisms: "PLAIN", PlainUsersFile: users}}},
		DataDir: dir, Config: cfg, Logger: zaptest.NewLogger(t), DrainTimeout: 2 * time.Second})
	require.NoError(t, n.Start(context.Background()))
	return n
}

func plainClient(t *testing.T, n *runtime.Node, user string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.ListenerAddr("SASL_PLAINTEXT")),
		kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()),
		kgo.RetryTimeout(2*time.Second), kgo.RecordDeliveryTimeout(5*time.Second),
		kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// TestACLsDecideASASLClientAndSurviveARestart: bob, authenticated with SASL, is refused a
// topic without ACLs; allowed at his next request once kadm's CreateACLs is answered;
// refused again at his next request once DeleteACLs is answered (never served from the
// state before the change); and an ACL created before a restart still holds after it.
func TestACLsDecideASASLClientAndSurviveARestart(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(users, []byte("admin:admin-secret\nbob:bob-secret\n"),
		0o600))
	dir := t.TempDir()
	n := startACLNode(t, dir, users)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = n.Close()
		}
	})
	ctx := testCtx(t, 60*time.Second)
	adm := kadm.NewClient(plainClient(t, n, "admin"))
	_, err := adm.CreateTopic(ctx, 1, 1, nil, "orders")
	require.NoError(t, err)

	produce := func(cl *kgo.Client) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr()
	}
	err = produce(plainClient(t, n, "bob"))
	require.True(t, errors.Is(err, kerr.TopicAuthorizationFailed), "got %v", err)
	// bob may not change ACLs either.
	refused, err := kadm.NewClient(plainClient(t, n, "bob")).CreateACLs(ctx,
		kadm.NewACLs().Allow("User:bob").Topics("orders").Operations(kadm.OpWrite))
	require.NoError(t, err)
	require.ErrorIs(t, refused[0].Err, kerr.ClusterAuthorizationFailed)

	grant := kadm.NewACLs().Allow("User:bob").Topics("orders").
		Operations(kadm.OpWrite, kadm.OpRead)
	created, err := adm.CreateACLs(ctx, grant)
	require.NoError(t, err)
	require.Len(t, created, 2)
	for _, c := range created {
		require.NoError(t, c.Err)
	}
	bob := plainClient(t, n, "bob")
	require.NoError(t, produce(bob), "allowed at once after CreateACLs")

	described, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("orders").
		ResourcePatternType(kadm.ACLPatternMatch).Allow().AllowHosts().Operations())
	require.NoError(t, err)
	require.Len(t, described, 1)
	require.Len(t, described[0].Described, 2)

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:bob").
		AllowHosts().Operations(kadm.OpWrite))
	require.NoError(t, err)
	require.Len(t, deleted[0].Deleted, 1)
	err = produce(bob)
	require.True(t, errors.Is(err, kerr.TopicAuthorizationFailed),
		"the next produce after DeleteACLs is refused, got %v", err)

	// What remains (READ) survives a restart, and so does a new WRITE.
	_, err = adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").Topics("ord").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
	require.NoError(t, err)
	require.NoError(t, n.Close())
	closed = true
	n = startACLNode(t, dir, users)
	t.Cleanup(func() { _ = n.Close() })
	everything := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow().AllowHosts().Operations()
	described, err = kadm.NewClient(plainClient(t, n, "admin")).DescribeACLs(ctx, everything)
	require.NoError(t, err)
	require.Len(t, described[0].Described, 2, "READ on orders, WRITE on ord*")
	require.NoError(t, produce(plainClient(t, n, "bob")), "the prefixed ACL allows orders")
	fetched := plainClient(t, n, "bob")
	fetched.AddConsumeTopics("orders")
	fs := fetched.PollFetches(ctx)
	require.NoError(t, fs.Err())
	require.NotZero(t, fs.NumRecords())
}

// TestACLClusterServesItsOwnTraffic: three nodes with the authorizer on and no ACL
// granting the brokers anything. Their inter-broker listener is SASL (user "broker"),
// so registrations, heartbeats, follower fetches and forwarded topic creations come as
// User:broker, which the authorizer lets through as the node's own inter-broker
// principal: every node registers, a replicated topic's acks=all writes are answered
// (the followers fetch), and a client that is not a super user is refused.
func TestACLClusterServesItsOwnTraffic(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(users,
		[]byte("broker:broker-secret\nadmin:admin-secret\nbob:bob-secret\n"), 0o600))
	sasl := kafkanet.SASLSettings{Mechanisms: "PLAIN", PlainUsersFile: users,
		InterBrokerUser: "broker", InterBrokerPassword: "broker-secret"}
	voters := []raftmeta.Voter{{ID: 1, Addr: freeAddr(t)}, {ID: 2, Addr: freeAddr(t)},
		{ID: 3, Addr: freeAddr(t)}}
	nodes := make([]*runtime.Node, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		cfg := broker.DefaultConfig()
		cfg.NodeID = int32(i + 1)
		require.NoError(t, cfg.Set("authorizer.class.name", "sluice"))
		require.NoError(t, cfg.Set("super.users", "User:admin"))
		ctl := controller.DefaultConfig()
		ctl.SessionTimeoutMs, ctl.HeartbeatIntervalMs = 1500, 200
		nodes[i] = runtime.NewNode(runtime.Options{
			Listeners: []runtime.Listener{{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0",
				Protocol: kafkanet.SASLPlaintext, SASL: sasl}},
			DataDir: t.TempDir(), Config: cfg, Controller: ctl,
			Logger:       zaptest.NewLogger(t).Named(fmt.Sprintf("n%d", i+1)),
			DrainTimeout: 2 * time.Second, Voters: voters, QuorumTiming: raftmeta.TestTiming()})
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = nodes[i].Start(context.Background()) }()
	}
	wg.Wait()
	for i, n := range nodes {
		require.NoError(t, errs[i])
		t.Cleanup(func() { _ = n.Close() })
	}
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			st, ok := n.Membership()
			if !ok || !st.Registered || st.Fenced {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "every node registered under the authorizer")

	ctx := testCtx(t, 60*time.Second)
	admin := plainClient(t, nodes[1], "admin")
	adm := kadm.NewClient(admin)
	require.Eventually(t, func() bool {
		r, err := adm.CreateTopic(ctx, 3, 3, nil, "replicated")
		return err == nil && r.Err == nil
	}, 20*time.Second, 100*time.Millisecond)
	for i := range 10 {
		r := admin.ProduceSync(ctx, &kgo.Record{Topic: "replicated",
			Value: []byte(fmt.Sprint(i))})
		require.NoError(t, r.FirstErr(), "acks=all needs the followers' fetches")
	}
	err := plainClient(t, nodes[2], "bob").ProduceSync(ctx,
		&kgo.Record{Topic: "replicated", Value: []byte("x")}).FirstErr()
	require.True(t, errors.Is(err, kerr.TopicAuthorizationFailed), "got %v", err)

	// An ACL created through one node reaches every node with the metadata: bob
	// writes to every partition, whose leaders are spread over the nodes.
	require.Eventually(t, func() bool {
		res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:bob").
			Topics("replicated").Operations(kadm.OpWrite))
		return err == nil && res[0].Err == nil
	}, 20*time.Second, 100*time.Millisecond)
	for p := range int32(3) {
		require.Eventually(t, func() bool {
			cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[p].ListenerAddr("SASL_PLAINTEXT")),
				kgo.SASL(plain.Auth{User: "bob", Pass: "bob-secret"}.AsMechanism()),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.RecordDeliveryTimeout(5*time.Second))
			require.NoError(t, err)
			defer cl.Close()
			return cl.ProduceSync(ctx, &kgo.Record{Topic: "replicated", Partition: p,
				Value: []byte("y")}).FirstErr() == nil
		}, 10*time.Second, 50*time.Millisecond, "bob may write to partition %d", p)
	}

	// A client claiming to be a broker is refused the controller RPCs.
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch = 2, 1
	resp, err := req.RequestWith(ctx, plainClient(t, nodes[0], "bob"))
	require.NoError(t, err)
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, resp.ErrorCode)

	// Issue 10: every node takes an ACL change at the first attempt; the two that do not
	// lead forward it to the controller's node in an Envelope over the SASL inter-broker
	// listener, as User:broker, which the authorizer lets do CLUSTER_ACTION. A client's
	// Envelope is refused.
	for id := 1; id <= 3; id++ {
		ca := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName = kmsg.ACLResourceTypeGroup, fmt.Sprint("g", id)
		c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host = "User:bob", "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		ca.Creations = []kmsg.CreateACLsRequestCreation{c}
		r, err := admin.Broker(id).Request(ctx, ca)
		require.NoError(t, err)
		res := r.(*kmsg.CreateACLsResponse).Results
		require.Len(t, res, 1)
		require.Zero(t, res[0].ErrorCode, "node %d: %v", id, res[0].ErrorMessage)
	}
	env := kmsg.NewPtrEnvelopeRequest()
	env.RequestData = []byte{0, 30, 0, 0}
	eresp, err := env.RequestWith(ctx, plainClient(t, nodes[0], "bob"))
	require.NoError(t, err)
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, eresp.ErrorCode)
}

// TestDescribeQuorumAndAuthorizedOperationsFollowACLs: DescribeQuorum, which the node
// answers itself, needs DESCRIBE on the cluster as in Kafka; a Metadata request that
// asks for KIP-430's authorized operations is told what the principal's ACLs allow.
func TestDescribeQuorumAndAuthorizedOperationsFollowACLs(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(users, []byte("admin:admin-secret\nbob:bob-secret\n"),
		0o600))
	n := startACLNode(t, t.TempDir(), users)
	t.Cleanup(func() { _ = n.Close() })
	ctx := testCtx(t, 60*time.Second)
	admin, bob := plainClient(t, n, "admin"), plainClient(t, n, "bob")
	_, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, "orders")
	require.NoError(t, err)
	created, err := kadm.NewClient(admin).CreateACLs(ctx,
		kadm.NewACLs().Allow("User:bob").Topics("orders").Operations(kadm.OpRead))
	require.NoError(t, err)
	require.NoError(t, created[0].Err)

	quorum := func(cl *kgo.Client) int16 {
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{
			kmsg.NewDescribeQuorumRequestTopicPartition()}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.ErrorCode
	}
	require.Equal(t, kerr.ClusterAuthorizationFailed.Code, quorum(bob))
	require.Zero(t, quorum(admin))

	md := kmsg.NewPtrMetadataRequest()
	md.IncludeTopicAuthorizedOperations = true
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("orders")
	md.Topics = append(md.Topics, mt)
	resp, err := md.RequestWith(ctx, bob)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Zero(t, resp.Topics[0].ErrorCode)
	require.EqualValues(t, 1<<3|1<<8, resp.Topics[0].AuthorizedOperations,
		"READ, and the DESCRIBE it implies")
}
