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
	cfg.NodeID = 1
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Config: cfg, Logger: zaptest.NewLogger(t), DrainTimeout: 2 * time.Second,
		Voters: []raftmeta.Voter{{ID: 1, Addr: freeAddr(t)}}, ControllerTLS: &ts,
		QuorumTiming: raftmeta.TestTiming()})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { _ = n.Close() })

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

func isTimeout(err error) bool {
	ne, ok := err.(interface{ Timeout() bool })
	return ok && ne.Timeout()
}
