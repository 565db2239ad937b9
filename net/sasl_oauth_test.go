package net

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"go.uber.org/zap/zaptest"
)

// issuer signs test tokens with its keys and writes them as a JWKS file.
type issuer struct {
	t    *testing.T
	path string
	keys map[string]crypto.Signer // kid -> private key
	algs map[string]jose.SignatureAlgorithm
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	is := &issuer{t: t, path: filepath.Join(t.TempDir(), "jwks.json"),
		keys: map[string]crypto.Signer{}, algs: map[string]jose.SignatureAlgorithm{}}
	is.addEC("ec1")
	is.write()
	return is
}

func (is *issuer) addEC(kid string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(is.t, err)
	is.keys[kid], is.algs[kid] = k, jose.ES256
}

func (is *issuer) addRSA(kid string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(is.t, err)
	is.keys[kid], is.algs[kid] = k, jose.RS256
}

// write writes the public keys of kids (all without kids) as the JWKS file.
func (is *issuer) write(kids ...string) {
	if len(kids) == 0 {
		for kid := range is.keys {
			kids = append(kids, kid)
		}
	}
	var set jose.JSONWebKeySet
	for _, kid := range kids {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: is.keys[kid].Public(), KeyID: kid,
			Algorithm: string(is.algs[kid]), Use: "sig"})
	}
	b, err := json.Marshal(set)
	require.NoError(is.t, err)
	require.NoError(is.t, os.WriteFile(is.path, b, 0o600))
}

// sign signs claims with kid's key (named kid in the header unless noKid).
func (is *issuer) sign(kid string, claims map[string]any) string {
	return is.signWith(is.keys[kid], is.algs[kid], kid, claims)
}

func (is *issuer) signWith(key crypto.Signer, alg jose.SignatureAlgorithm, kid string,
	claims map[string]any) string {
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	require.NoError(is.t, err)
	raw, err := jwt.Signed(s).Claims(claims).Serialize()
	require.NoError(is.t, err)
	return raw
}

// claims are valid claims for sub, expiring in an hour, with edits applied.
func claims(sub string, edits map[string]any) map[string]any {
	now := time.Now().Unix()
	c := map[string]any{"sub": sub, "exp": now + 3600, "iat": now, "iss": "https://idp",
		"aud": []string{"kafka"}, "scope": "produce consume"}
	for k, v := range edits {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func (is *issuer) validator(s SASLSettings) *OAuthValidator {
	is.t.Helper()
	_, err := s.Set("sasl.oauthbearer.jwks.endpoint.url", "file://"+is.path)
	require.NoError(is.t, err)
	v, err := s.newOAuthValidator(zaptest.NewLogger(is.t))
	require.NoError(is.t, err)
	return v
}

func TestOAuthValidatorAcceptsValidTokensAndRefusesTheRest(t *testing.T) {
	is := newIssuer(t)
	is.addRSA("rsa1")
	is.write()
	var s SASLSettings
	for k, v := range map[string]string{"sasl.oauthbearer.expected.audience": "other,kafka",
		"sasl.oauthbearer.expected.issuer": "https://idp"} {
		_, err := s.Set(k, v)
		require.NoError(t, err)
	}
	v := is.validator(s)
	now := time.Now().Unix()

	tok, err := v.validate(is.sign("ec1", claims("alice", nil)))
	require.NoError(t, err)
	require.Equal(t, "alice", tok.subject)
	require.Equal(t, []string{"produce", "consume"}, tok.scope)
	require.Equal(t, now+3600, tok.expiry.Unix())
	tok, err = v.validate(is.sign("rsa1", claims("bob", map[string]any{"exp": now - 20,
		"scope": []string{"a"}})))
	require.NoError(t, err, "expired 20 s ago: within the 30 s clock skew")
	require.Equal(t, "bob", tok.subject)
	require.Equal(t, []string{"a"}, tok.scope)

	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	for _, tc := range []struct{ name, token, want string }{
		{"expired", is.sign("ec1", claims("a", map[string]any{"exp": now - 31})),
			"expired"},
		{"no exp", is.sign("ec1", claims("a", map[string]any{"exp": nil})), "no exp"},
		{"not yet valid", is.sign("ec1", claims("a", map[string]any{"nbf": now + 60})),
			"not valid yet"},
		{"issued in the future", is.sign("ec1", claims("a", map[string]any{"iat": now + 60})),
			"future"},
		{"wrong audience", is.sign("ec1", claims("a", map[string]any{"aud": "web"})),
			"audience"},
		{"wrong issuer", is.sign("ec1", claims("a", map[string]any{"iss": "https://evil"})),
			"issuer"},
		{"no sub", is.sign("ec1", claims("a", map[string]any{"sub": nil})), "sub claim"},
		{"sub not a string", is.sign("ec1", claims("a", map[string]any{"sub": 7})),
			"cannot unmarshal"},
		{"bad scope", is.sign("ec1", claims("a", map[string]any{"scope": 7})), "scope"},
		{"wrong signature", is.signWith(other, jose.ES256, "ec1", claims("a", nil)),
			`the signature does not verify with key "ec1"`},
		{"unknown kid", is.signWith(other, jose.ES256, "nope", claims("a", nil)),
			`no key with kid "nope"`},
		{"no kid, two keys", is.signWith(other, jose.ES256, "", claims("a", nil)),
			"names no key"},
		{"key for another alg", is.signWith(is.keys["rsa1"], jose.PS256, "rsa1",
			claims("a", nil)), "is for RS256"},
		{"garbage", "not.a.jwt", "not a signed JWT"},
		{"unsigned", unsignedJWT(claims("a", nil)), "not a signed JWT"},
		{"HMAC", hmacJWT(t, claims("a", nil)), "not a signed JWT"},
	} {
		_, err := v.validate(tc.token)
		require.ErrorContains(t, err, tc.want, tc.name)
		require.NotContains(t, err.Error(), tc.token, "the token is never quoted")
	}

	// sasl.oauthbearer.sub.claim.name and clock.skew.seconds.
	_, _ = s.Set("sasl.oauthbearer.sub.claim.name", "client_id")
	_, _ = s.Set("sasl.oauthbearer.clock.skew.seconds", "0")
	v = is.validator(s)
	tok, err = v.validate(is.sign("ec1", claims("alice", map[string]any{"client_id": "app"})))
	require.NoError(t, err)
	require.Equal(t, "app", tok.subject)
	_, err = v.validate(is.sign("ec1", claims("a", map[string]any{"client_id": "app",
		"exp": now - 2})))
	require.ErrorContains(t, err, "expired")
}

func unsignedJWT(c map[string]any) string {
	b, _ := json.Marshal(c)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(b) + "."
}

func hmacJWT(t *testing.T, c map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256,
		Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	require.NoError(t, err)
	raw, err := jwt.Signed(s).Claims(c).Serialize()
	require.NoError(t, err)
	return raw
}

func TestParseOAuthFirstMessage(t *testing.T) {
	authz, tok, err := parseOAuthFirst([]byte("n,,\x01auth=Bearer abc.def-_.g\x01\x01"))
	require.NoError(t, err)
	require.Equal(t, "", authz)
	require.Equal(t, "abc.def-_.g", tok)
	authz, tok, err = parseOAuthFirst([]byte(
		"n,a=al=2Cice,\x01host=x\x01auth=bearer t\x01traceId=1\x01\x01"))
	require.NoError(t, err)
	require.Equal(t, "al,ice", authz)
	require.Equal(t, "t", tok)
	for _, bad := range []string{"", "\x01", "y,,\x01auth=Bearer t\x01\x01",
		"p=tls-unique,,\x01auth=Bearer t\x01\x01", "n,\x01auth=Bearer t\x01\x01",
		"n,b=x,\x01auth=Bearer t\x01\x01", "n,a=,\x01auth=Bearer t\x01\x01",
		"n,,auth=Bearer t\x01\x01", "n,,\x01auth=Bearer t\x01", "n,,\x01\x01",
		"n,,\x01host=x\x01\x01", "n,,\x01auth=Basic dTpw\x01\x01",
		"n,,\x01auth=Bearer \x01\x01", "n,,\x01auth=Bearer a b\x01\x01",
		"n,,\x01auth=Bearer a\x01auth=Bearer b\x01\x01", "n,,\x01=x\x01auth=Bearer t\x01\x01",
		"n,,\x01k1=x\x01auth=Bearer t\x01\x01", "n,,\x01auth=Bearer t\x00\x01\x01",
		"n,,\x01auth=Bearer " + strings.Repeat("a", maxOAuthMessageBytes) + "\x01\x01",
	} {
		_, _, err := parseOAuthFirst([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

// The JWKS file is re-read: at once (at most once a second) for an unknown key id, and
// every sasl.oauthbearer.jwks.endpoint.refresh.ms for a removed key; a file that does
// not load keeps the keys in use.
func TestOAuthJWKSRotationIsPickedUp(t *testing.T) {
	is := newIssuer(t)
	var s SASLSettings
	_, _ = s.Set("sasl.oauthbearer.jwks.endpoint.refresh.ms", "60000")
	v := is.validator(s)
	clock := time.Now()
	v.jwks.now = func() time.Time { return clock }

	is.addEC("ec2")
	is.write("ec1", "ec2")
	tok, err := v.validate(is.sign("ec2", claims("alice", nil)))
	require.NoError(t, err, "a new key is used at once")
	require.Equal(t, "alice", tok.subject)

	is.write("ec2") // ec1 removed
	_, err = v.validate(is.sign("ec1", claims("a", nil)))
	require.NoError(t, err, "a removed key is used until the next refresh")
	clock = clock.Add(time.Minute)
	_, err = v.validate(is.sign("ec1", claims("a", nil)))
	require.ErrorContains(t, err, `no key with kid "ec1"`)

	require.NoError(t, os.WriteFile(is.path, []byte("{broken"), 0o600))
	clock = clock.Add(time.Minute)
	_, err = v.validate(is.sign("ec2", claims("a", nil)))
	require.NoError(t, err, "a broken file keeps the keys in use")
	require.NoError(t, os.WriteFile(is.path, make([]byte, maxJWKSBytes+1), 0o600))
	clock = clock.Add(time.Minute)
	_, err = v.validate(is.sign("ec2", claims("a", nil)))
	require.NoError(t, err, "an oversized file keeps the keys in use")
}

func TestOAuthSettings(t *testing.T) {
	var s SASLSettings
	for _, bad := range [][2]string{
		{"sasl.oauthbearer.jwks.endpoint.url", "https://idp/jwks"},
		{"sasl.oauthbearer.jwks.endpoint.url", "file://"},
		{"sasl.oauthbearer.clock.skew.seconds", "-1"},
		{"sasl.oauthbearer.jwks.endpoint.refresh.ms", "x"},
		{"sasl.mechanism.inter.broker.protocol", "OAUTHBEARER"},
	} {
		known, err := s.Set(bad[0], bad[1])
		require.True(t, known)
		require.Error(t, err, bad[0]+"="+bad[1])
	}
	_, err := s.Set("sasl.oauthbearer.jwks.endpoint.url", "https://idp/jwks")
	require.ErrorContains(t, err, "only file:// URLs are supported")
	for in, want := range map[string]string{"file:///etc/jwks.json": "/etc/jwks.json",
		"file://localhost/etc/j": "/etc/j", "file://./jwks.json": "./jwks.json"} {
		got, err := jwksPath(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err = s.Set("sasl.enabled.mechanisms", "OAUTHBEARER")
	require.NoError(t, err)
	_, err = s.ServerConfig(nil, zaptest.NewLogger(t))
	require.ErrorContains(t, err, "sasl.oauthbearer.jwks.endpoint.url")
	dir := t.TempDir()
	for _, content := range []string{"{}", `{"keys":[]}`, "nope",
		`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`} {
		p := filepath.Join(dir, "jwks")
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		_, _ = s.Set("sasl.oauthbearer.jwks.endpoint.url", "file://"+p)
		_, err = s.ServerConfig(nil, zaptest.NewLogger(t))
		require.Error(t, err, content)
	}
}

// startOAuth starts a server whose SASL_PLAINTEXT listener enables OAUTHBEARER.
func startOAuth(t *testing.T, sink *fakeSink, v *OAuthValidator, opts Options) *Server {
	t.Helper()
	opts.Logger = zaptest.NewLogger(t)
	cfg := &SASLConfig{Mechanisms: []string{MechOAuthBearer}, OAuth: v}
	srv, err := ListenAll([]Listener{{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0",
		SASL: cfg}}, sink, opts)
	require.NoError(t, err)
	sink.srv = srv
	srv.Start()
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv
}

func bearer(token string) []byte { return []byte("n,,\x01auth=Bearer " + token + "\x01\x01") }

func TestSASLOAuthBearerOnTheWire(t *testing.T) {
	is := newIssuer(t)
	v := is.validator(SASLSettings{})
	sink := newFakeSink(false)
	srv := startOAuth(t, sink, v, Options{ReauthAfter: time.Hour,
		FailedAuthDelay: 50 * time.Millisecond})

	// A valid token: the principal is its subject, the session ends with the token.
	exp := time.Now().Add(10 * time.Minute)
	nc := dialSASL(t, srv)
	require.Zero(t, handshake(t, nc, 1, "OAUTHBEARER").ErrorCode)
	au := authenticate(t, nc, 1, bearer(is.sign("ec1",
		claims("alice", map[string]any{"exp": exp.Unix()}))))
	require.Zero(t, au.ErrorCode)
	require.Empty(t, au.SASLAuthBytes)
	require.InDelta(t, time.Until(exp).Milliseconds(), au.SessionLifetimeMillis, 5000,
		"min(connections.max.reauth.ms, token exp)")
	requireServedAs(t, srv, sink, nc, "User:alice")

	// Re-authentication with a token of another subject is refused.
	require.Zero(t, handshake(t, nc, 1, "OAUTHBEARER").ErrorCode)
	au = authenticate(t, nc, 1, bearer(is.sign("ec1", claims("mallory", nil))))
	require.Equal(t, kerr.SaslAuthenticationFailed.Code, au.ErrorCode)
	requireClosed(t, nc)

	// An invalid token: the error challenge, then the failure after the client's 0x01.
	nc = dialSASL(t, srv)
	require.Zero(t, handshake(t, nc, 1, "OAUTHBEARER").ErrorCode)
	expired := is.sign("ec1", claims("alice", map[string]any{"exp": time.Now().Unix() - 600}))
	au = authenticate(t, nc, 2, bearer(expired))
	require.Zero(t, au.ErrorCode)
	require.JSONEq(t, `{"status":"invalid_token"}`, string(au.SASLAuthBytes))
	start := time.Now()
	au = authenticate(t, nc, 2, []byte{1})
	require.Equal(t, kerr.SaslAuthenticationFailed.Code, au.ErrorCode)
	require.Equal(t, `{"status":"invalid_token"}`, *au.ErrorMessage)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	requireClosed(t, nc)

	// Malformed and oversized messages fail at once, without an answer that quotes them.
	for _, msg := range [][]byte{[]byte("garbage"), {1},
		bearer(strings.Repeat("a", 100<<10)), bearer("x" + expired)} {
		nc = dialSASL(t, srv)
		require.Zero(t, handshake(t, nc, 1, "OAUTHBEARER").ErrorCode)
		au = authenticate(t, nc, 1, msg)
		if au.ErrorCode == 0 { // a well-framed token that does not verify
			require.JSONEq(t, oauthInvalidToken, string(au.SASLAuthBytes))
			au = authenticate(t, nc, 1, []byte{1})
		}
		require.Equal(t, kerr.SaslAuthenticationFailed.Code, au.ErrorCode)
		require.Less(t, len(*au.ErrorMessage), 200)
		requireClosed(t, nc)
	}
	require.EqualValues(t, 6, srv.Stats().SASLFailures)
	require.Len(t, sink.reqs, 1, "nothing but alice's metadata reached the node")
}

// franz-go's OAUTHBEARER mechanism authenticates, re-authenticates before the token's
// expiry bounds the session, and is refused with an expired token.
func TestSASLOAuthBearerWithFranzGo(t *testing.T) {
	is := newIssuer(t)
	v := is.validator(SASLSettings{})
	sink := newFakeSink(true)
	srv := startOAuth(t, sink, v, Options{ReauthAfter: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	newClient := func(token string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(srv.ListenerAddr("SASL_PLAINTEXT")),
			kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	cl := newClient(is.sign("ec1", claims("alice", nil)))
	require.NoError(t, cl.Ping(ctx))
	bad := newClient(is.sign("ec1", claims("alice", map[string]any{"exp": 1})))
	err := bad.Ping(ctx)
	require.ErrorContains(t, err, "invalid_token")
}
