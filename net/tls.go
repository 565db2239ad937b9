package net

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"time"

	"go.uber.org/zap"
)

// Anonymous is the principal of a connection that did not authenticate (Kafka's
// KafkaPrincipal.ANONYMOUS): every plaintext connection, and a TLS one without a client
// certificate.
const Anonymous = "User:ANONYMOUS"

// PrincipalOf is the principal of a verified client certificate under Kafka's
// ssl.principal.mapping.rules=DEFAULT: "User:" and the certificate's subject as an RFC
// 2253 distinguished name, most specific attribute first ("User:CN=app,O=Example").
func PrincipalOf(cert *x509.Certificate) string {
	return "User:" + cert.Subject.String()
}

// handshake runs the TLS handshake of a connection on a TLS listener, before its first
// request. It must end within sluice.request.read.timeout.ms: a client that opens a
// connection and never finishes the handshake holds its slot no longer than one that
// starts a frame and never finishes it. False closes the connection.
func (c *conn) handshake() bool {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return true
	}
	timeout := c.srv.opts.RequestReadTimeout
	deadline := time.Now().Add(timeout)
	_ = tc.SetWriteDeadline(deadline)
	if !c.setReadDeadline(deadline) {
		return false
	}
	err := tc.Handshake()
	_ = tc.SetWriteDeadline(time.Time{})
	if err != nil {
		if c.draining.Load() {
			return false
		}
		c.srv.counters.tlsHandshakeFailures.Add(1)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.srv.counters.readTimeouts.Add(1)
		}
		if ok, skipped := c.srv.handshakeSample.allow(); ok {
			c.lg.Info("closing connection: TLS handshake failed (a plaintext client on a "+
				"TLS port, an untrusted or missing client certificate, or no handshake "+
				"within sluice.request.read.timeout.ms)", zap.Error(err),
				zap.Duration("timeout", timeout), zap.Uint64("not_logged_since_last", skipped))
		}
		return false
	}
	// The idle deadline is armed by the first awaitFrame.
	st := tc.ConnectionState()
	if len(st.PeerCertificates) > 0 {
		c.principal = PrincipalOf(st.PeerCertificates[0])
	}
	c.lg.Debug("TLS handshake done", zap.String("principal", c.principal),
		zap.String("tls_version", tls.VersionName(st.Version)))
	return true
}
