package e2e

import (
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// requireClosedWithin reads nc until the node closes it, failing after bound.
func requireClosedWithin(t *testing.T, nc net.Conn, bound time.Duration, what string) {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(bound)))
	buf := make([]byte, 512)
	for {
		if _, err := nc.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("%s: not closed within %v", what, bound)
			}
			return
		}
	}
}

// Hostile clients of a SASL listener (docs/limits.md, "SASL"), all from one address:
// 200 connections that never authenticate, 50 that stop after SaslHandshake, 20 that
// announce a 100 MB frame and 20 a 1 MiB SaslAuthenticate before authenticating, 20
// that send a Produce instead, and 100 wrong passwords. The oversized and out-of-place
// ones are closed at once, the silent ones by sluice.sasl.authentication.timeout.ms
// (3 s here), failed authentications are logged sampled and never with a password,
// and a well-behaved client is served throughout and authenticates afterwards.
func TestHostileSASLClients(t *testing.T) {
	s := startSASLNode(t, "sluice.sasl.authentication.timeout.ms=3000\n"+
		"connection.failed.authentication.delay.ms=10\nmax.connections.per.ip=600\n")
	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.SetVersion(1)
	handshake.Mechanism = "PLAIN"

	var silent, oversized []net.Conn
	for i := range 250 {
		nc := dialFrom(t, s.saslPlain, "127.0.0.2")
		if i >= 200 {
			_, _ = nc.Write(formatter.AppendRequest(nil, handshake, 1))
		}
		silent = append(silent, nc)
	}
	start := time.Now()
	for i := range 60 {
		nc := dialFrom(t, s.saslPlain, "127.0.0.2")
		switch {
		case i < 20: // a 100 MB frame announced before authentication
			_, _ = nc.Write(binary.BigEndian.AppendUint32(nil, 100<<20))
		case i < 40: // a 1 MiB SaslAuthenticate after the handshake
			_, _ = nc.Write(formatter.AppendRequest(nil, handshake, 1))
			auth := kmsg.NewPtrSASLAuthenticateRequest()
			auth.SetVersion(2)
			auth.SASLAuthBytes = []byte(strings.Repeat("x", 1<<20))
			_, _ = nc.Write(formatter.AppendRequest(nil, auth, 2))
		default: // a Produce before authenticating
			_, _ = nc.Write(formatter.AppendRequest(nil, kmsg.NewPtrProduceRequest(), 1))
		}
		oversized = append(oversized, nc)
	}
	for _, nc := range oversized {
		// Well before the authentication timeout: closed when read, not timed out.
		requireClosedWithin(t, nc, 2*time.Second, "an oversized or unauthenticated request")
	}
	t.Logf("oversized and out-of-place requests closed %v after they were sent",
		time.Since(start).Round(10*time.Millisecond))

	wrong := kmsg.NewPtrSASLAuthenticateRequest()
	wrong.SetVersion(2)
	wrong.SASLAuthBytes = []byte("\x00alice\x00guess")
	var guesses []net.Conn
	for range 100 { // pipelined: handshake and a wrong password, then closed
		nc := dialFrom(t, s.saslPlain, "127.0.0.3")
		_, _ = nc.Write(append(formatter.AppendRequest(nil, handshake, 1),
			formatter.AppendRequest(nil, wrong, 2)...))
		guesses = append(guesses, nc)
	}
	for _, nc := range guesses {
		requireClosedWithin(t, nc, 5*time.Second, "a wrong password")
	}
	s.requireServes("during-sasl-flood", 5*time.Second)
	for _, nc := range silent {
		requireClosedWithin(t, nc, 8*time.Second, "an unauthenticated connection")
	}
	t.Logf("all %d silent connections closed %v after they opened", len(silent),
		time.Since(start).Round(10*time.Millisecond))

	good := s.client(t, false, plain.Auth{User: "alice", Pass: alicePassword}.AsMechanism())
	require.NoError(t, good.Ping(ctx(t, 5*time.Second)), "a client authenticates after the flood")
	log := s.logText()
	require.NotContains(t, log, "guess", "passwords are never logged")
	failures := strings.Count(log, "SASL authentication failed")
	require.Less(t, failures, 20, "failed authentications are logged sampled")
	require.Contains(t, log, "sluice.sasl.authentication.timeout.ms")
	s.requireWithin(250<<20, 200)
}
