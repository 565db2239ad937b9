package net

// OAUTHBEARER tokens (KIP-255) validated as Kafka's OAuthBearerValidatorCallbackHandler
// validates them with a JWKS: a JWT signed (RS*, PS*, ES*, EdDSA) by a key of the JSON
// Web Key Set named by sasl.oauthbearer.jwks.endpoint.url, which must be a file://
// URL here (docs/security.md, "OAUTHBEARER"). The file is re-read when it changes:
// looked at every sasl.oauthbearer.jwks.endpoint.refresh.ms, and at once (at most once
// a jwksMissRecheck) when a token names a key id the set does not hold, so a key added
// before the tokens it signs is used without a restart. JWT and JWK parsing and the
// signature check are go-jose's (docs/decisions.md).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"go.uber.org/zap"
)

// Bounds of OAUTHBEARER (docs/limits.md, "SASL").
const (
	// maxJWKSBytes bounds the JWKS file, read at every check: a key set of a few
	// dozen RSA keys takes tens of KiB.
	maxJWKSBytes = 1 << 20
	// maxOAuthMessageBytes bounds the client's first OAUTHBEARER message, token
	// included (Kafka bounds it only by sasl.server.max.receive.size): tokens carrying
	// many groups reach a few KiB.
	maxOAuthMessageBytes = 64 << 10
	// jwksMissRecheck is how often, at most, a token naming an unknown key id makes the
	// node look at the JWKS file again.
	jwksMissRecheck = time.Second
)

// oauthAlgorithms are the signature algorithms accepted: asymmetric only (a JWKS holds
// public keys; "none" and HMAC are refused).
var oauthAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
}

// OAuthValidator validates OAUTHBEARER tokens. Connection readers call it concurrently.
type OAuthValidator struct {
	jwks       *jwksFile
	audience   []string // sasl.oauthbearer.expected.audience: any of them
	issuer     string   // sasl.oauthbearer.expected.issuer
	subClaim   string   // sasl.oauthbearer.sub.claim.name
	scopeClaim string   // sasl.oauthbearer.scope.claim.name
	skew       time.Duration
	now        func() time.Time
}

// oauthToken is what a valid token says.
type oauthToken struct {
	subject string
	expiry  time.Time
	scope   []string
}

// NewOAuthValidator reads the JWKS file (it must load) and builds the validator of
// the settings.
func (s *SASLSettings) newOAuthValidator(lg *zap.Logger) (*OAuthValidator, error) {
	if s.JWKSFile == "" {
		return nil, errors.New("sasl.enabled.mechanisms names OAUTHBEARER: give the " +
			"key set that signs the tokens in sasl.oauthbearer.jwks.endpoint.url " +
			"(file:///path/to/jwks.json)")
	}
	every := defaultJWKSRefresh
	if s.jwksRefreshSet {
		every = s.JWKSRefresh
	}
	j, err := newJWKSFile(s.JWKSFile, every, lg, time.Now)
	if err != nil {
		return nil, err
	}
	v := &OAuthValidator{jwks: j, audience: s.ExpectedAudience, issuer: s.ExpectedIssuer,
		subClaim: s.SubClaim, scopeClaim: s.ScopeClaim, skew: defaultClockSkew, now: time.Now}
	if s.clockSkewSet {
		v.skew = s.ClockSkew
	}
	if v.subClaim == "" {
		v.subClaim = "sub"
	}
	if v.scopeClaim == "" {
		v.scopeClaim = "scope"
	}
	return v, nil
}

// validate checks a compact JWS token and returns what it says. Errors are for the
// log: they never quote the token.
func (v *OAuthValidator) validate(raw string) (oauthToken, error) {
	tok, err := jwt.ParseSigned(raw, oauthAlgorithms)
	if err != nil {
		return oauthToken{}, fmt.Errorf("not a signed JWT with an accepted algorithm: %w", err)
	}
	if len(tok.Headers) != 1 {
		return oauthToken{}, errors.New("not a single-signature JWT")
	}
	h := tok.Headers[0]
	key, err := v.jwks.key(h.KeyID, h.Algorithm)
	if err != nil {
		return oauthToken{}, err
	}
	var std jwt.Claims
	var all map[string]any
	if err := tok.Claims(key.Key, &std, &all); err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return oauthToken{}, fmt.Errorf("the signature does not verify with key %q",
				h.KeyID)
		}
		return oauthToken{}, fmt.Errorf("the claims do not decode: %w", err)
	}
	return v.checkClaims(std, all)
}

// checkClaims checks the time claims, the audience, the issuer, the subject and the
// scope of a token whose signature verified.
func (v *OAuthValidator) checkClaims(std jwt.Claims, all map[string]any) (oauthToken, error) {
	if std.Expiry == nil {
		return oauthToken{}, errors.New("the token has no exp claim")
	}
	now := v.now()
	exp := jwt.Expected{Issuer: v.issuer, AnyAudience: v.audience, Time: now}
	if err := std.ValidateWithLeeway(exp, v.skew); err != nil {
		return oauthToken{}, fmt.Errorf("claims (exp %s, now %s, clock skew %s): %w",
			std.Expiry.Time().UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339),
			v.skew, err)
	}
	sub, _ := all[v.subClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return oauthToken{}, fmt.Errorf("the token's %s claim (sasl.oauthbearer.sub."+
			"claim.name) is missing, empty or not a string", v.subClaim)
	}
	scope, err := scopeOf(all[v.scopeClaim])
	if err != nil {
		return oauthToken{}, fmt.Errorf("the token's %s claim (sasl.oauthbearer.scope."+
			"claim.name): %w", v.scopeClaim, err)
	}
	return oauthToken{subject: strings.TrimSpace(sub), expiry: std.Expiry.Time(),
		scope: scope}, nil
}

// scopeOf reads a scope claim: absent, a space-separated string, or a list of strings.
func scopeOf(c any) ([]string, error) {
	switch c := c.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.Fields(c), nil
	case []any:
		out := make([]string, 0, len(c))
		for _, s := range c {
			str, ok := s.(string)
			if !ok {
				return nil, errors.New("a list holding something else than strings")
			}
			out = append(out, str)
		}
		return out, nil
	}
	return nil, errors.New("not a string or a list of strings")
}

// jwksFile serves the keys of a JWKS file, re-read when its content changes (compared,
// as certReloader does), at most every `every` and, for an unknown key id, at most
// every jwksMissRecheck. A file that does not load keeps the keys in use, logged.
type jwksFile struct {
	path  string
	every time.Duration
	lg    *zap.Logger
	now   func() time.Time

	mu        sync.Mutex
	set       jose.JSONWebKeySet
	raw       []byte
	checked   time.Time
	missCheck time.Time
}

func newJWKSFile(path string, every time.Duration, lg *zap.Logger,
	now func() time.Time) (*jwksFile, error) {
	j := &jwksFile{path: path, every: every, lg: lg, now: now}
	b, err := readJWKS(path)
	if err != nil {
		return nil, err
	}
	set, err := parseJWKS(path, b)
	if err != nil {
		return nil, err
	}
	j.set, j.raw, j.checked = set, b, now()
	return j, nil
}

// readJWKS reads the file, refusing one above maxJWKSBytes.
func readJWKS(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url: %w", err)
	}
	if len(b) > maxJWKSBytes {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: larger than %d "+
			"bytes", path, maxJWKSBytes)
	}
	return b, nil
}

// parseJWKS reads a key set holding at least one public signing key.
func parseJWKS(path string, b []byte) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return set, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: not a JSON Web Key "+
			"Set: %w", path, err)
	}
	usable := set.Keys[:0]
	for _, k := range set.Keys {
		if pub := k.Public(); pub.Valid() && (k.Use == "" || k.Use == "sig") {
			usable = append(usable, pub)
		}
	}
	if len(usable) == 0 {
		return set, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url %s: no public signing "+
			"key (RSA, EC or OKP) in the set", path)
	}
	set.Keys = usable
	return set, nil
}

// key finds the key that verifies a token signed with alg by the key kid.
func (j *jwksFile) key(kid, alg string) (jose.JSONWebKey, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.now()
	if j.every > 0 && now.Sub(j.checked) >= j.every {
		j.checked = now
		j.reloadIfChanged()
	}
	k, ok := j.lookup(kid)
	if !ok && now.Sub(j.missCheck) >= jwksMissRecheck {
		j.missCheck, j.checked = now, now
		j.reloadIfChanged()
		k, ok = j.lookup(kid)
	}
	switch {
	case !ok && kid == "":
		return k, errors.New("the token names no key (kid) and the JWKS holds more " +
			"than one")
	case !ok:
		return k, fmt.Errorf("no key with kid %q in the JWKS file", kid)
	case k.Algorithm != "" && k.Algorithm != alg:
		return k, fmt.Errorf("key %q is for %s, the token is signed with %s", kid,
			k.Algorithm, alg)
	}
	return k, nil
}

// lookup finds kid's key; a token without kid uses the set's only key.
func (j *jwksFile) lookup(kid string) (jose.JSONWebKey, bool) {
	if kid == "" {
		if len(j.set.Keys) == 1 {
			return j.set.Keys[0], true
		}
		return jose.JSONWebKey{}, false
	}
	if ks := j.set.Key(kid); len(ks) > 0 {
		return ks[0], true
	}
	return jose.JSONWebKey{}, false
}

// reloadIfChanged re-reads the file and loads it when its content changed since it was
// last read.
func (j *jwksFile) reloadIfChanged() {
	b, err := readJWKS(j.path)
	if err != nil {
		j.lg.Error("cannot check the OAUTHBEARER JWKS file; keeping the keys in use",
			zap.String("file", j.path), zap.Error(err))
		return
	}
	if bytes.Equal(b, j.raw) {
		return
	}
	j.raw = b
	set, err := parseJWKS(j.path, b)
	if err != nil {
		j.lg.Error("the OAUTHBEARER JWKS file changed but does not load; keeping the "+
			"keys in use", zap.Error(err))
		return
	}
	j.set = set
	j.lg.Info("OAUTHBEARER JWKS file reloaded", zap.String("file", j.path),
		zap.Int("keys", len(set.Keys)))
}
