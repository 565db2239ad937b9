package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// Three nodes whose inter-broker listener is SSL with client certificates required and
// whose clients' listener is PLAINTEXT: registrations and heartbeats travel over TLS
// (a node without the right certificate could not register), the metadata quorum's
// transport is mutual TLS with the same certificates (ControllerTLS; a plaintext join
// request to it gets no answer), each registration holds
// both listeners with the inter-broker one as its address, and Metadata lists every
// broker at its address on the listener the request came in on.
func TestClusterOverSSLInterBrokerListener(t *testing.T) {
	f := newTLSFiles(t, "required")
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
		tlsSettings := f.settings
		_, err := tlsSettings.Set("ssl.keystore.location", f.server) // also the client cert
		require.NoError(t, err)
		nodes[i] = runtime.NewNode(runtime.Options{
			Listeners: []runtime.Listener{
				{Name: "EXTERNAL", Addr: "127.0.0.1:0", Protocol: kafkanet.Plaintext},
				{Name: "INTERNAL", Addr: "127.0.0.1:0", Protocol: kafkanet.SSL,
					TLS: tlsSettings},
			},
			InterBrokerListener: "INTERNAL", DataDir: t.TempDir(), Config: cfg,
			Controller: ctl, Rack: fmt.Sprintf("r%d", i+1),
			Logger:       zaptest.NewLogger(t).Named(fmt.Sprintf("n%d", i+1)),
			DrainTimeout: 2 * time.Second, Voters: voters, ControllerTLS: &tlsSettings,
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
	}, 20*time.Second, 20*time.Millisecond, "every node registered and unfenced over TLS")

	conn, err := net.DialTimeout("tcp", nodes[0].QuorumAddr(), 2*time.Second)
	require.NoError(t, err)
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	_, _ = conn.Write(append([]byte{0xE5}, `{"id":9,"addr":"127.0.0.1:9"}`+"\n"...))
	_, err = bufio.NewReader(conn).ReadByte()
	require.Error(t, err, "the quorum transport answered a plaintext join")
	_ = conn.Close()

	for _, n := range nodes {
		require.Eventually(t, func() bool { return len(brokersSeen(n)) == 3 },
			10*time.Second, 20*time.Millisecond)
		for i, other := range nodes {
			b := brokersSeen(n)[int32(i+1)]
			internal := other.ListenerAddr("INTERNAL")
			require.Equal(t, internal, fmt.Sprintf("%s:%d", b.Host, b.Port))
			require.Equal(t, []string{"INTERNAL", "EXTERNAL"}, endpointNames(b.Listeners))
		}
	}

	want := func(listener string) map[int32]string {
		out := map[int32]string{}
		for i, n := range nodes {
			out[int32(i+1)] = n.ListenerAddr(listener)
		}
		return out
	}
	seen := func(cl *kgo.Client) map[int32]string {
		raw, err := cl.SeedBrokers()[0].Request(testCtx(t, 5*time.Second),
			kmsg.NewPtrMetadataRequest())
		require.NoError(t, err)
		out := map[int32]string{}
		for _, b := range raw.(*kmsg.MetadataResponse).Brokers {
			out[b.NodeID] = fmt.Sprintf("%s:%d", b.Host, b.Port)
		}
		return out
	}
	plain := newClient(t, nodes[0])
	require.Eventually(t, func() bool { return len(seen(plain)) == 3 }, 5*time.Second,
		20*time.Millisecond)
	require.Equal(t, want("EXTERNAL"), seen(plain))
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[1].ListenerAddr("INTERNAL")),
		kgo.DialTLSConfig(f.clientConfig(true)), kgo.DialTimeout(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	require.Equal(t, want("INTERNAL"), seen(cl))
}

func endpointNames(eps []meta.Endpoint) []string {
	var out []string
	for _, e := range eps {
		out = append(out, e.Name)
	}
	return out
}
