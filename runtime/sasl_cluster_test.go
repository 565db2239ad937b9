package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// Three nodes whose inter-broker listener is SASL_PLAINTEXT with PLAIN (each node
// authenticates to its peers as user "broker") and whose clients' listener accepts
// SCRAM-SHA-512 only. The nodes register over the SASL listener; a SCRAM user created
// through node 1 is replicated with the metadata, and authenticates on every node;
// once deleted, it authenticates on none.
func TestSCRAMUsersAuthenticateOnEveryNode(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(users, []byte("broker:broker-secret\n"), 0o600))
	internal := kafkanet.SASLSettings{Mechanisms: "PLAIN", PlainUsersFile: users,
		InterBrokerUser: "broker", InterBrokerPassword: "broker-secret"}
	voters := []raftmeta.Voter{{ID: 1, Addr: freeAddr(t)}, {ID: 2, Addr: freeAddr(t)},
		{ID: 3, Addr: freeAddr(t)}}
	nodes := make([]*runtime.Node, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range nodes {
		cfg := broker.DefaultConfig()
		cfg.NodeID = int32(i + 1)
		ctl := controller.DefaultConfig()
		ctl.SessionTimeoutMs, ctl.HeartbeatIntervalMs = 1500, 200
		nodes[i] = runtime.NewNode(runtime.Options{
			Listeners: []runtime.Listener{
				{Name: "CLIENT", Addr: "127.0.0.1:0", Protocol: kafkanet.SASLPlaintext,
					SASL: kafkanet.SASLSettings{Mechanisms: "SCRAM-SHA-512"}},
				{Name: "INTERNAL", Addr: "127.0.0.1:0", Protocol: kafkanet.SASLPlaintext,
					SASL: internal},
			},
			InterBrokerListener: "INTERNAL", DataDir: t.TempDir(), Config: cfg,
			Controller: ctl, Logger: zaptest.NewLogger(t).Named(fmt.Sprintf("n%d", i+1)),
			DrainTimeout: 2 * time.Second, Voters: voters,
			QuorumTiming: raftmeta.TestTiming()})
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
	}, 20*time.Second, 20*time.Millisecond, "every node registered over SASL")

	client := func(n *runtime.Node, listener string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(n.ListenerAddr(listener)),
			kgo.RetryTimeout(2*time.Second))...)
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	admin := client(nodes[0], "INTERNAL",
		kgo.SASL(plain.Auth{User: "broker", Pass: "broker-secret"}.AsMechanism()))
	alter := func(del []kadm.DeleteSCRAM, up []kadm.UpsertSCRAM) {
		require.Eventually(t, func() bool { // the controller may still be settling
			res, err := kadm.NewClient(admin).AlterUserSCRAMs(testCtx(t, 5*time.Second), del, up)
			return err == nil && res["bob"].Err == nil
		}, 15*time.Second, 100*time.Millisecond)
	}
	alter(nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512,
		Password: "bob-secret"}})
	bob := kgo.SASL(scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism())
	for _, n := range nodes {
		require.Eventually(t, func() bool {
			return client(n, "CLIENT", bob).Ping(testCtx(t, 3*time.Second)) == nil
		}, 10*time.Second, 50*time.Millisecond, "bob authenticates on every node")
	}
	alter([]kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}}, nil)
	for _, n := range nodes {
		require.Eventually(t, func() bool {
			return client(n, "CLIENT", bob).Ping(testCtx(t, 3*time.Second)) != nil
		}, 10*time.Second, 50*time.Millisecond, "a deleted user authenticates nowhere")
	}
}
