package runtime_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sluicemq/sluice/internal/devcert"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
)

// tlsFiles is a throw-away CA, a server key pair file and a client certificate.
type tlsFiles struct {
	ca       *devcert.CA
	caFile   string
	server   string
	client   tls.Certificate
	roots    *x509.CertPool
	settings kafkanet.TLSSettings
}

func newTLSFiles(t *testing.T, clientAuth string) *tlsFiles {
	t.Helper()
	dir := t.TempDir()
	ca, err := devcert.NewCA("test CA", time.Hour)
	require.NoError(t, err)
	srv, err := ca.Issue(devcert.Leaf{CommonName: "localhost", Server: true})
	require.NoError(t, err)
	cl, err := ca.Issue(devcert.Leaf{CommonName: "writer", Organization: "Acme"})
	require.NoError(t, err)
	f := &tlsFiles{ca: ca, caFile: filepath.Join(dir, "ca.pem"),
		server: filepath.Join(dir, "server.pem"), roots: x509.NewCertPool()}
	require.NoError(t, os.WriteFile(f.caFile, ca.PEM, 0o600))
	require.NoError(t, os.WriteFile(f.server, srv.Combined(), 0o600))
	f.roots.AddCert(ca.Cert)
	f.client, err = tls.X509KeyPair(cl.CertPEM, cl.KeyPEM)
	require.NoError(t, err)
	for _, kv := range [][2]string{{"ssl.keystore.location", f.server},
		{"ssl.truststore.location", f.caFile}, {"ssl.client.auth", clientAuth}} {
		_, err := f.settings.Set(kv[0], kv[1])
		require.NoError(t, err)
	}
	return f
}

func (f *tlsFiles) clientConfig(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: f.roots}
	if withCert {
		cfg.Certificates = []tls.Certificate{f.client}
	}
	return cfg
}

// startTLSNode runs a node with a PLAINTEXT and an SSL listener.
func startTLSNode(t *testing.T, f *tlsFiles, lg *zap.Logger) *runtime.Node {
	t.Helper()
	n := runtime.NewNode(runtime.Options{
		Listeners: []runtime.Listener{
			{Name: "PLAINTEXT", Addr: "127.0.0.1:0", Protocol: kafkanet.Plaintext},
			{Name: "SSL", Addr: "127.0.0.1:0", Protocol: kafkanet.SSL, TLS: f.settings},
		},
		DataDir: t.TempDir(), Logger: lg, DrainTimeout: 2 * time.Second,
	})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n
}

func sslClient(t *testing.T, n *runtime.Node, cfg *tls.Config, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(n.ListenerAddr("SSL")), kgo.DialTLSConfig(cfg),
		kgo.DialTimeout(2 * time.Second), kgo.RetryTimeout(10 * time.Second),
		kgo.FetchMaxWait(200 * time.Millisecond), kgo.MetadataMinAge(50 * time.Millisecond)}
	cl, err := kgo.NewClient(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// Produce and consume over SSL: Metadata sent on the SSL listener names the SSL
// address (else the client would carry on in plaintext), fetches take the ordinary
// write path rather than the direct one and return exactly the records produced, and
// a plaintext client beside it is told the plaintext address.
func TestProduceConsumeOverSSL(t *testing.T) {
	f := newTLSFiles(t, "requested")
	n := startTLSNode(t, f, zaptest.NewLogger(t))
	cl := sslClient(t, n, f.clientConfig(true), kgo.ConsumeTopics("tls"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	createTopic(t, cl, "tls", 2)

	brokers, err := kadm.NewClient(cl).BrokerMetadata(testCtx(t, 5*time.Second))
	require.NoError(t, err)
	require.Len(t, brokers.Brokers, 1)
	require.Equal(t, n.ListenerAddr("SSL"), fmt.Sprintf("%s:%d", brokers.Brokers[0].Host,
		brokers.Brokers[0].Port))
	plain := newClient(t, n)
	pb, err := kadm.NewClient(plain).BrokerMetadata(testCtx(t, 5*time.Second))
	require.NoError(t, err)
	require.Equal(t, n.ListenerAddr("PLAINTEXT"), fmt.Sprintf("%s:%d", pb.Brokers[0].Host,
		pb.Brokers[0].Port))

	const count = 500
	want := map[string]string{}
	for i := range count {
		k, v := "k"+strconv.Itoa(i), fmt.Sprintf("value-%d-%0200d", i, i)
		want[k] = v
		require.NoError(t, cl.ProduceSync(testCtx(t, 10*time.Second),
			&kgo.Record{Topic: "tls", Key: []byte(k), Value: []byte(v)}).FirstErr())
	}
	got := map[string]string{}
	ctx := testCtx(t, 20*time.Second)
	for len(got) < count {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		require.Empty(t, fs.Errors())
		fs.EachRecord(func(r *kgo.Record) {
			_, dup := got[string(r.Key)]
			require.False(t, dup, "record %s read twice", r.Key)
			got[string(r.Key)] = string(r.Value)
		})
	}
	require.Equal(t, want, got)
}

// ssl.client.auth=required: a client without a certificate cannot use the node; one
// with a certificate can, and the node sees the certificate's subject as its
// principal.
func TestRequiredClientAuthOverSSL(t *testing.T) {
	f := newTLSFiles(t, "required")
	core, logs := observer.New(zapcore.DebugLevel)
	n := startTLSNode(t, f, zap.New(core))

	anon := sslClient(t, n, f.clientConfig(false), kgo.RetryTimeout(time.Second))
	err := anon.Ping(testCtx(t, 3*time.Second))
	require.Error(t, err)

	cl := sslClient(t, n, f.clientConfig(true))
	require.NoError(t, cl.Ping(testCtx(t, 5*time.Second)))
	createTopic(t, cl, "authed", 1)
	principals := logs.FilterMessage("TLS handshake done").
		FilterField(zap.String("principal", "User:CN=writer,O=Acme"))
	require.NotZero(t, principals.Len())
	require.NotZero(t, logs.FilterMessageSnippet("TLS handshake failed").Len())
}

// A node whose SSL certificate has expired is refused by clients, and its plaintext
// listener keeps serving.
func TestExpiredCertificateOverSSL(t *testing.T) {
	f := newTLSFiles(t, "none")
	old, err := f.ca.Issue(devcert.Leaf{CommonName: "localhost", Server: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f.server, old.Combined(), 0o600))
	n := startTLSNode(t, f, zaptest.NewLogger(t))
	cl := sslClient(t, n, f.clientConfig(false), kgo.RetryTimeout(time.Second))
	err = cl.Ping(testCtx(t, 3*time.Second))
	require.ErrorContains(t, err, "expired")
	require.NoError(t, newClient(t, n).Ping(testCtx(t, 5*time.Second)))
}

// A SASL listener enabling PLAIN without its users file is refused at start, naming
// the setting; so is an inter-broker listener that does not exist.
func TestUnsupportedListenersAreRefusedAtStart(t *testing.T) {
	for _, tc := range []struct {
		opts runtime.Options
		want string
	}{
		{runtime.Options{Listeners: []runtime.Listener{{Name: "SASL_PLAINTEXT",
			Addr: "127.0.0.1:0", Protocol: kafkanet.SASLPlaintext,
			SASL: kafkanet.SASLSettings{Mechanisms: "PLAIN"}}}},
			"sluice.sasl.plain.users.file"},
		{runtime.Options{Listeners: []runtime.Listener{{Name: "SASL_PLAINTEXT",
			Addr: "127.0.0.1:0", Protocol: kafkanet.SASLPlaintext}},
			Peers: map[int32]string{2: "127.0.0.1:1"}}, "sluice.sasl.inter.broker.user"},
		{runtime.Options{Listeners: []runtime.Listener{{Name: "PLAINTEXT",
			Addr: "127.0.0.1:0", Protocol: kafkanet.Plaintext}}, InterBrokerListener: "INTERNAL"},
			"inter.broker.listener.name"},
		{runtime.Options{Listeners: []runtime.Listener{{Name: "SSL",
			Addr: "127.0.0.1:0", Protocol: kafkanet.SSL}}}, "ssl.keystore.location"},
	} {
		tc.opts.DataDir = t.TempDir()
		tc.opts.Logger = zaptest.NewLogger(t)
		n := runtime.NewNode(tc.opts)
		err := n.Start(context.Background())
		require.ErrorContains(t, err, tc.want)
		require.NoError(t, n.Close())
	}
}
