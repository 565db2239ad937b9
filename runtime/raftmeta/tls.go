package raftmeta

import (
	"crypto/tls"
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

// refusals logs refused TLS handshakes on the quorum transport, rate limited.
type refusals struct {
	lg         *zap.Logger
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (r *refusals) log(remote net.Addr, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if now.Sub(r.last) < handshakeLogEvery {
		r.suppressed++
		return
	}
	r.lg.Warn("quorum transport: refused a connection, its TLS handshake failed (a "+
		"plaintext peer, or a certificate the truststore does not accept)",
		zap.Stringer("remote", remote), zap.Error(err),
		zap.Int("refused_since_last_line", r.suppressed))
	r.last, r.suppressed = now, 0
}

// serverHandshake runs the TLS handshake of an accepted connection within bound; a
// failure is logged and the connection closed.
func (l *joinLayer) serverHandshake(c net.Conn, bound time.Duration) (net.Conn, bool) {
	tc := tls.Server(c, l.tls.Server)
	_ = tc.SetDeadline(time.Now().Add(bound))
	if err := tc.Handshake(); err != nil {
		l.refused.log(c.RemoteAddr(), err)
		_ = c.Close()
		return nil, false
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, true
}

// dialQuorum connects to a peer's quorum transport: TCP, then TLS when configured, the
// handshake within timeout.
func dialQuorum(address string, timeout time.Duration, t *TransportTLS) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	if t == nil {
		return d.Dial("tcp", address)
	}
	c, err := tls.DialWithDialer(d, "tcp", address, t.Client)
	if err != nil {
		return nil, fmt.Errorf("TLS connection to quorum peer %s: %w", address, err)
	}
	return c, nil
}
