package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// oauthKeyScript is docs/security.md's recipe ("OAUTHBEARER"): an RSA key, its JWKS
// and a token for alice, with openssl alone.
const oauthKeyScript = `set -eu
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
openssl genrsa -out oauth-key.pem 2048 2>/dev/null
n=$(openssl rsa -in oauth-key.pem -noout -modulus | cut -d= -f2 | xxd -r -p | b64url)
printf '{"keys":[{"kty":"RSA","kid":"k1","alg":"RS256","use":"sig","n":"%s","e":"AQAB"}]}\n' \
  "$n" > jwks.json
h=$(printf '{"alg":"RS256","typ":"JWT","kid":"k1"}' | b64url)
p=$(printf '{"sub":"alice","iss":"https://idp.example","exp":%d}' \
  $(( $(date +%s) + 3600 )) | b64url)
s=$(printf '%s.%s' "$h" "$p" | openssl dgst -sha256 -sign oauth-key.pem | b64url)
echo "$h.$p.$s" > token
`

// ecIssuer signs ES256 tokens with a key whose JWKS is written to dir/ec-jwks.json.
type ecIssuer struct {
	t   *testing.T
	key *ecdsa.PrivateKey
}

func newECIssuer(t *testing.T, dir string) *ecIssuer {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey,
		KeyID: "ec1", Algorithm: "ES256", Use: "sig"}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ec-jwks.json"), b, 0o600))
	return &ecIssuer{t: t, key: k}
}

func (is *ecIssuer) token(sub string, life time.Duration) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: is.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "ec1"))
	require.NoError(is.t, err)
	now := time.Now()
	raw, err := jwt.Signed(s).Claims(jwt.Claims{Subject: sub, Issuer: "https://idp.example",
		Expiry: jwt.NewNumericDate(now.Add(life)), IssuedAt: jwt.NewNumericDate(now)}).
		Serialize()
	require.NoError(is.t, err)
	return raw
}

// startOAuthNode is startSASLNode with OAUTHBEARER (and PLAIN) on SASL_PLAINTEXT and
// SASL_SSL, validated against the JWKS made by the documented openssl steps; dir holds
// it, its token (dir/token) and an EC key set (ec-jwks.json).
func startOAuthNode(t *testing.T, jwks, extra string) (*saslNode, string) {
	t.Helper()
	for _, tool := range []string{"openssl", "xxd", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx(t, 30*time.Second), "bash", "-c", oauthKeyScript)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	if jwks == "" {
		jwks = filepath.Join(dir, "jwks.json")
	}
	s := startSASLNode(t, fmt.Sprintf(`listener.name.sasl_plaintext.sasl.enabled.mechanisms=OAUTHBEARER,PLAIN
listener.name.sasl_ssl.sasl.enabled.mechanisms=OAUTHBEARER
sasl.oauthbearer.jwks.endpoint.url=file://%s
sasl.oauthbearer.expected.issuer=https://idp.example
%s`, jwks, extra))
	return s, dir
}

// franz-go's OAUTHBEARER produces and consumes over SASL_PLAINTEXT and SASL_SSL with
// the token of the documented openssl steps; `sluice topic list --sasl-mechanism
// OAUTHBEARER --sasl-token-file` works; an expired or forged token is refused with
// SASL_AUTHENTICATION_FAILED, never logged, and the node keeps serving.
func TestSASLOAuthBearer(t *testing.T) {
	s, dir := startOAuthNode(t, "", "")
	tokenBytes, err := os.ReadFile(filepath.Join(dir, "token"))
	require.NoError(t, err)
	token := string(tokenBytes[:len(tokenBytes)-1])
	m := oauth.Auth{Token: token}.AsMechanism()
	for _, overTLS := range []bool{false, true} {
		produceConsume(t, s.client(t, overTLS, m, kgo.ConsumeResetOffset(
			kgo.NewOffset().AtStart())), fmt.Sprint("oauth-", overTLS), 10)
	}
	out, err := cli(t, nil, "topic", "list", "--bootstrap", s.saslPlain,
		"--sasl-mechanism", "OAUTHBEARER", "--sasl-token-file", filepath.Join(dir, "token"))
	require.NoError(t, err, out)
	require.Contains(t, out, "oauth-false")

	forged := newECIssuer(t, dir).token("alice", time.Hour) // a key not in the JWKS
	for _, bad := range []string{forged, token[:len(token)-4] + "AAAA"} {
		cl := s.client(t, false, oauth.Auth{Token: bad}.AsMechanism(),
			kgo.RetryTimeout(time.Second))
		err := cl.Ping(ctx(t, 10*time.Second))
		require.ErrorIs(t, err, kerr.SaslAuthenticationFailed)
		require.ErrorContains(t, err, "invalid_token")
	}
	out, err = cli(t, []string{"SLUICE_SASL_TOKEN=" + forged}, "topic", "list",
		"--bootstrap", s.saslPlain, "--sasl-mechanism", "OAUTHBEARER", "--timeout", "3s")
	require.Error(t, err, out)
	require.Contains(t, out, "authentication failed")
	log := s.logText()
	require.Contains(t, log, "SASL authentication failed")
	require.NotContains(t, log, forged[len(forged)-20:], "tokens are never logged")
	require.NotContains(t, log, token[len(token)-20:])
	s.requireServes("after-oauth-refusals", 15*time.Second)
}

// With connections.max.reauth.ms longer than the tokens' life, the session ends with
// the token (KIP-368): franz-go re-authenticates with a fresh token before it does,
// and is never cut off.
func TestSASLOAuthBearerSessionEndsWithTheToken(t *testing.T) {
	jwksDir := t.TempDir()
	is := newECIssuer(t, jwksDir)
	s, _ := startOAuthNode(t, filepath.Join(jwksDir, "ec-jwks.json"),
		"connections.max.reauth.ms=600000\n")
	var tokens atomic.Int32
	m := oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		tokens.Add(1)
		return oauth.Auth{Token: is.token("app", 3*time.Second)}, nil
	})
	cl := s.client(t, false, m)
	c := ctx(t, 30*time.Second)
	end := time.Now().Add(7 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		require.NoError(t, cl.ProduceSync(c, &kgo.Record{Topic: "oauth-reauth",
			Value: []byte(fmt.Sprint(i))}).FirstErr())
		time.Sleep(100 * time.Millisecond)
	}
	require.NotContains(t, s.logText(), "SASL session expired",
		"the client re-authenticated before every expiry")
	require.GreaterOrEqual(t, tokens.Load(), int32(3), "a token per session of about 3 s")
}
