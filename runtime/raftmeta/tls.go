package raftmeta

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"
)

// TransportTLS makes the quorum transport speak TLS with mutual authentication: every
// connection, raft's and a non-voter's join alike, is a TLS connection on which both
// ends present a certificate the other verifies (docs/quorum.md, "Transport").
type TransportTLS struct {
	// Server accepts connections; it must require and verify a client certificate
	// (tls.RequireAndVerifyClientCert, with ClientCAs). Its GetCertificate may reload the
	// key pair: each new connection asks it.
	Server *tls.Config
	// Client dials peers; it must present a certificate (Certificates or
	// GetClientCertificate) and verify the peer's (RootCAs).
	Client *tls.Config
	// PeerAllowed, when set, decides whether an accepted peer whose certificate chains to
	// the truststore may speak on the transport (leaf: its certificate); one it refuses
	// is logged and closed before it sends a byte. Nil: any such certificate is a member.
	PeerAllowed func(leaf *x509.Certificate) bool
}

func (t *TransportTLS) check() error {
	switch {
	case t.Server == nil || t.Client == nil:
		return errors.New("quorum TLS needs both a server and a client configuration")
	case t.Server.ClientAuth != tls.RequireAndVerifyClientCert || t.Server.ClientCAs == nil:
		return errors.New("quorum TLS must require and verify the peers' client " +
			"certificates (a truststore and ssl.client.auth=required)")
	case len(t.Client.Certificates) == 0 && t.Client.GetClientCertificate == nil:
		return errors.New("quorum TLS needs this node's certificate to present to its peers")
	}
	return nil
}

// handshakeLogEvery bounds the refused-handshake log lines: one per this period, with
// how many were refused since the last line (a port scan must not flood the log).
const handshakeLogEvery = 5 * time.Second

// refusals logs refused connections on the quorum transport, rate limited.
type refusals struct {
	lg         *zap.Logger
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

const (
	refusedHandshake = "quorum transport: refused a connection, its TLS handshake failed " +
		"(a plaintext peer, or a certificate the truststore does not accept)"
	refusedPeer = "quorum transport: refused a peer whose certificate may not join the " +
		"quorum (with an authorizer, a member's principal is a super user or this " +
		"node's own)"
)

func (r *refusals) log(msg string, remote net.Addr, why zap.Field) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if now.Sub(r.last) < handshakeLogEvery {
		r.suppressed++
		return
	}
	r.lg.Warn(msg, zap.Stringer("remote", remote), why,
		zap.Int("refused_since_last_line", r.suppressed))
	r.last, r.suppressed = now, 0
}

// serverHandshake runs the TLS handshake of an accepted connection within bound; a
// failure is logged and the connection closed.
func (l *joinLayer) serverHandshake(c net.Conn, bound time.Duration) (net.Conn, bool) {
	tc := tls.Server(c, l.tls.Server)
	_ = tc.SetDeadline(time.Now().Add(bound))
	if err := tc.Handshake(); err != nil {
		l.refused.log(refusedHandshake, c.RemoteAddr(), zap.Error(err))
		_ = c.Close()
		return nil, false
	}
	if allowed := l.tls.PeerAllowed; allowed != nil {
		// RequireAndVerifyClientCert (check) guarantees a verified leaf.
		leaf := tc.ConnectionState().PeerCertificates[0]
		if !allowed(leaf) {
			l.refused.log(refusedPeer, c.RemoteAddr(),
				zap.String("subject", leaf.Subject.String()))
			_ = c.Close()
			return nil, false
		}
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, true
}

// dialQuorum connects to a peer's quorum transport: TCP, then TLS when configured, the
// handshake within timeout, and the peer's certificate checked as an accepted peer's
// is (TransportTLS.PeerAllowed).
func dialQuorum(address string, timeout time.Duration, t *TransportTLS) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if t == nil {
		return d.Dial("tcp", address)
	}
	c, err := tls.DialWithDialer(d, "tcp", address, t.Client)
	if err != nil {
		return nil, fmt.Errorf("TLS connection to quorum peer %s: %w", address, err)
	}
	// The peer is held to the rule it holds us to: a node not allowed to join is sent
	// nothing, not even as a voter the configuration names.
	if t.PeerAllowed != nil {
		if leaf := c.ConnectionState().PeerCertificates[0]; !t.PeerAllowed(leaf) {
			_ = c.Close()
			return nil, fmt.Errorf("quorum peer %s presented a certificate (%s) that may "+
				"not join the quorum", address, leaf.Subject)
		}
	}
	return c, nil
}
