package e2e

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// Hostile OAUTHBEARER clients (docs/limits.md, "SASL"), from one address: 100 that
// send well-formed JWTs naming a fresh unknown key id each (each would make the node
// re-read the JWKS file, at most once a second) with 48 KiB of claims, and answer the
// error challenge; 50 that send a 400 KiB token (under sasl.server.max.receive.size,
// over the 64 KiB message bound); 50 that send garbage. All are refused and closed
// promptly, no token reaches the log, and a client with a valid token is served
// throughout.
func TestHostileOAuthBearerClients(t *testing.T) {
	s, dir := startOAuthNode(t, "", "connection.failed.authentication.delay.ms=10\n"+
		"max.connections.per.ip=600\n")
	tok, err := os.ReadFile(filepath.Join(dir, "token"))
	require.NoError(t, err)
	good := s.client(t, false, oauth.Auth{Token: strings.TrimSpace(string(tok))}.AsMechanism())
	require.NoError(t, good.Ping(ctx(t, 5*time.Second)))

	handshake := kmsg.NewPtrSASLHandshakeRequest()
	handshake.SetVersion(1)
	handshake.Mechanism = "OAUTHBEARER"
	auth := func(corr int32, b []byte) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.SetVersion(2)
		r.SASLAuthBytes = b
		return formatter.AppendRequest(nil, r, corr)
	}
	enc := base64.RawURLEncoding.EncodeToString
	filler := strings.Repeat("g", 48<<10)
	start := time.Now()
	var conns []net.Conn
	for i := range 200 {
		var first []byte
		switch {
		case i < 100: // a JWT naming an unknown kid, then the 0x01 reply
			h := enc([]byte(fmt.Sprintf(`{"alg":"RS256","kid":"k-%d"}`, i)))
			p := enc([]byte(fmt.Sprintf(`{"sub":"x","exp":%d,"groups":"%s"}`,
				time.Now().Unix()+600, filler)))
			first = []byte("n,,\x01auth=Bearer " + h + "." + p + ".c2ln\x01\x01")
		case i < 150:
			first = []byte("n,,\x01auth=Bearer " + strings.Repeat("a", 400<<10) + "\x01\x01")
		default:
			first = []byte("garbage-" + filler)
		}
		b := append(formatter.AppendRequest(nil, handshake, 1), auth(2, first)...)
		b = append(b, auth(3, []byte{1})...)
		nc := dialFrom(t, s.saslPlain, "127.0.0.2")
		_, _ = nc.Write(b)
		conns = append(conns, nc)
	}
	s.requireServes("during-oauth-flood", 5*time.Second)
	for _, nc := range conns {
		requireClosedWithin(t, nc, 5*time.Second, "a refused OAUTHBEARER client")
	}
	t.Logf("200 hostile OAUTHBEARER clients closed within %v",
		time.Since(start).Round(10*time.Millisecond))
	require.NoError(t, good.Ping(ctx(t, 5*time.Second)), "the good client is still served")
	log := s.logText()
	require.NotContains(t, log, filler[:64], "tokens are never logged")
	require.Less(t, strings.Count(log, "SASL authentication failed"), 20,
		"failures are logged sampled")
	s.requireWithin(250<<20, 200)
}
