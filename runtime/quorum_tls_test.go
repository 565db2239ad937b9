package runtime_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/internal/devcert"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// TestQuorumTLSReloadsItsCertificate: a voter whose quorum transport is mutual TLS
// (ControllerTLS with a keystore file) refuses a peer without a client certificate,
// presents its certificate to one with, and presents the renewed certificate on the
// next new connection once its keystore file was replaced, without a restart.
func TestQuorumTLSReloadsItsCertificate(t *testing.T) {
	f := newTLSFiles(t, "none") // ssl.client.auth is required on the quorum regardless
	ts := f.settings
	_, err := ts.Set("sluice.ssl.keystore.reload.check.ms", "1")
	require.NoError(t, err)
	cfg := broker.DefaultConfig()
	n := startQuorumTLSVoter(t, cfg, ts)

	serial := func(withCert bool) (string, error) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", n.QuorumAddr(), f.clientConfig(withCert))
		if err != nil {
			return "", err
		}
		defer c.Close()
		// TLS 1.3 reports a refused client certificate at the first read.
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil && !isTimeout(err) {
			return "", err
		}
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
	}
	_, err = serial(false)
	require.Error(t, err, "a peer without a client certificate is refused")
	before, err := serial(true)
	require.NoError(t, err)

	renewed, err := f.ca.Issue(devcert.Leaf{CommonName: "localhost", Server: true})
	require.NoError(t, err)
	tmp := f.server + ".new"
	require.NoError(t, os.WriteFile(tmp, renewed.Combined(), 0o600))
	require.NoError(t, os.Rename(tmp, f.server))
	require.Eventually(t, func() bool {
		after, err := serial(true)
		return err == nil && after != before
	}, 10*time.Second, 20*time.Millisecond, "new quorum connections keep the old certificate")
}

// startQuorumTLSVoter starts node 1, the only voter of a quorum whose transport has
// the TLS settings ts.
func startQuorumTLSVoter(t *testing.T, cfg broker.Config, ts kafkanet.TLSSettings) *runtime.Node {
	t.Helper()
	cfg.NodeID = 1
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Config: cfg, Logger: zaptest.NewLogger(t), DrainTimeout: 2 * time.Second,
		Voters: []raftmeta.Voter{{ID: 1, Addr: freeAddr(t)}}, ControllerTLS: &ts,
		QuorumTiming: raftmeta.TestTiming()})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func isTimeout(err error) bool {
	ne, ok := err.(interface{ Timeout() bool })
	return ok && ne.Timeout()
}

// TestQuorumWithAnAuthorizerAdmitsSuperUsersAndItself: with authorizer.class.name set,
// a certificate from the quorum's CA is not enough to speak on the quorum transport:
// its principal must be a super user or the node's own (the same certificate, as nodes
// sharing one have). A client's certificate from the same CA is closed right after the
// handshake; without an authorizer it is let in, as before.
func TestQuorumWithAnAuthorizerAdmitsSuperUsersAndItself(t *testing.T) {
	f := newTLSFiles(t, "none")
	start := func(authz bool) *runtime.Node {
		cfg := broker.DefaultConfig()
		if authz {
			cfg.Authz = broker.AuthzConfig{Enabled: true, ClassName: "sluice",
				SuperUsers: []string{"User:CN=admin"}}
		}
		return startQuorumTLSVoter(t, cfg, f.settings)
	}
	issue := func(cn string) tls.Certificate {
		p, err := f.ca.Issue(devcert.Leaf{CommonName: cn, Server: true})
		require.NoError(t, err)
		c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
		require.NoError(t, err)
		return c
	}
	own, err := tls.LoadX509KeyPair(f.server, f.server)
	require.NoError(t, err)
	// admitted: the connection stays open (a read waits) rather than being closed.
	admitted := func(n *runtime.Node, cert tls.Certificate) bool {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp",
			n.QuorumAddr(), &tls.Config{RootCAs: f.roots, Certificates: []tls.Certificate{cert}})
		require.NoError(t, err)
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		var b [1]byte
		_, err = c.Read(b[:])
		return isTimeout(err)
	}
	n := start(true)
	require.False(t, admitted(n, f.client), "a client's certificate (CN=writer,O=Acme)")
	require.True(t, admitted(n, own), "the node's own certificate")
	require.True(t, admitted(n, issue("admin")), "a super user's")
	require.False(t, admitted(n, issue("other node")), "another name, not a super user")
	require.True(t, admitted(start(false), f.client), "no authorizer: any certificate")
}
