package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/internal/devcert"
)

// Hostile clients of an SSL listener (docs/limits.md, "TLS handshakes"): 300
// connections that never send a ClientHello, 50 that stop half-way through one and 50
// plaintext Kafka clients, all from one address. The node closes every one within the
// handshake bound (sluice.request.read.timeout.ms, 1 s here), a plaintext client from
// elsewhere is served throughout, and a TLS client gets in once they are gone.
func TestHostileTLSHandshakes(t *testing.T) {
	f, err := devcert.Write(t.TempDir())
	require.NoError(t, err)
	plain := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ssl := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	conf := filepath.Join(t.TempDir(), "server.properties")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(
		"listeners=PLAINTEXT://%s,SSL://%s\nssl.keystore.location=%s\n"+
			"sluice.request.read.timeout.ms=1000\nmax.connections.per.ip=500\n",
		plain, ssl, f.Server)), 0o600))
	n := startProcess(t, []string{"node", "--config", conf, "--data", t.TempDir(),
		"--http-listen="}, plain, ssl)

	var conns []net.Conn
	for i := range 400 {
		nc := dialFrom(t, ssl, "127.0.0.2")
		switch {
		case i >= 350: // a plaintext Kafka client on the TLS port
			_, _ = nc.Write(formatter.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1))
		case i >= 300: // the start of a ClientHello record, then nothing
			_, _ = nc.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00})
		}
		conns = append(conns, nc)
	}
	start := time.Now()
	n.requireServes("during-tls-flood", 5*time.Second)
	for _, nc := range conns {
		require.NoError(t, nc.SetReadDeadline(time.Now().Add(5*time.Second)))
		buf := make([]byte, 256)
		for {
			if _, err := nc.Read(buf); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatalf("a stalled handshake was not closed within 5 s")
				}
				break
			}
		}
	}
	t.Logf("all %d hostile connections closed %v after the flood", len(conns),
		time.Since(start).Round(10*time.Millisecond))

	roots := x509.NewCertPool()
	ca, err := os.ReadFile(f.CA)
	require.NoError(t, err)
	roots.AppendCertsFromPEM(ca)
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ssl,
		&tls.Config{RootCAs: roots})
	require.NoError(t, err, "a TLS client gets in after the flood")
	_ = tc.Close()
	n.requireServes("after-tls-flood", 2*time.Second)
	n.requireWithin(200<<20, 200)
}
