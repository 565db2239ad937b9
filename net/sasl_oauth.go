package net

// SASL/OAUTHBEARER (RFC 7628, Kafka's KIP-255): the client's first message carries a
// bearer token, a JWT validated against the JWKS file (oauthjwks.go). A valid token
// authenticates User:<sub claim> at once. An invalid one is answered, as Kafka's
// OAuthBearerSaslServer does, with the error challenge {"status":"invalid_token"}; the
// client's reply (a single 0x01) then fails the authentication with
// SASL_AUTHENTICATION_FAILED (sasl.go, saslFailed). A malformed message fails at once.
// The token's expiry bounds the session (saslSucceeded) when connections.max.reauth.ms
// is set.

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// MechOAuthBearer is the OAUTHBEARER mechanism's name.
const MechOAuthBearer = "OAUTHBEARER"

// oauthInvalidToken is the error challenge of RFC 7628 section 3.2.2, as Kafka sends it.
const oauthInvalidToken = `{"status":"invalid_token"}`

// oauthExchange is one OAUTHBEARER authentication.
type oauthExchange struct {
	v      *OAuthValidator
	steps  int
	failed error     // why the token was refused: the challenge was sent
	expiry time.Time // the valid token's exp
}

func (o *oauthExchange) step(in []byte) ([]byte, string, error) {
	o.steps++
	switch {
	case o.steps == 1:
		return o.first(in)
	case o.steps == 2 && o.failed != nil:
		// The client's answer to the challenge, a lone 0x01 (anything else fails too:
		// Kafka would start over, which only a new connection may do here).
		return nil, "", &saslFailure{msg: oauthInvalidToken, cause: o.failed}
	}
	return nil, "", oauthFailure(errors.New("exchange already ended"))
}

// first reads the client's first message and validates its token.
func (o *oauthExchange) first(in []byte) ([]byte, string, error) {
	authz, token, err := parseOAuthFirst(in)
	if err != nil {
		return nil, "", oauthFailure(err)
	}
	if o.v == nil {
		return nil, "", oauthFailure(errors.New("no JWKS configured"))
	}
	tok, err := o.v.validate(token)
	if err != nil {
		o.failed = err
		return []byte(oauthInvalidToken), "", nil
	}
	if authz != "" && authz != tok.subject {
		return nil, tok.subject, saslError("Authentication failed: Client requested an " +
			"authorization id that is different from the token's principal name")
	}
	o.expiry = tok.expiry
	return []byte{}, tok.subject, nil
}

// credentialExpiry is when the token authenticated by the exchange expires.
func (o *oauthExchange) credentialExpiry() time.Time { return o.expiry }

// oauthFailure is a failure Kafka reports as a SaslException: the generic message.
func oauthFailure(cause error) error {
	return &saslFailure{msg: "Authentication failed during authentication due to " +
		"invalid credentials with SASL mechanism " + MechOAuthBearer, cause: cause}
}

// parseOAuthFirst reads RFC 7628's initial client response:
//
//	gs2-header 0x01 *(key "=" value 0x01) 0x01, gs2-header = "n," ["a=" saslname] ","
//
// with an auth=Bearer <token> pair. Channel binding is not offered, so the flag must be
// "n". Errors never quote the token.
func parseOAuthFirst(in []byte) (authz, token string, err error) {
	if len(in) > maxOAuthMessageBytes {
		return "", "", fmt.Errorf("first message of %d bytes, above the %d-byte bound",
			len(in), maxOAuthMessageBytes)
	}
	msg := string(in)
	rest, ok := strings.CutPrefix(msg, "n,")
	if !ok {
		return "", "", errors.New("the message does not start with the GS2 header n,")
	}
	zid, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", errors.New("unterminated GS2 header")
	}
	if zid != "" {
		name, isZid := strings.CutPrefix(zid, "a=")
		if !isZid || name == "" {
			return "", "", errors.New("malformed authorization id in the GS2 header")
		}
		if authz, ok = decodeSaslName(name); !ok {
			return "", "", errors.New("malformed authorization id in the GS2 header")
		}
	}
	pairs, ok := strings.CutPrefix(rest, "\x01")
	if !ok || !strings.HasSuffix(pairs, "\x01\x01") {
		return "", "", errors.New("the key-value pairs are not framed by 0x01")
	}
	pairs = strings.TrimSuffix(pairs, "\x01\x01")
	for _, kv := range strings.Split(pairs, "\x01") {
		key, value, ok := strings.Cut(kv, "=")
		if !ok || !oauthKey(key) {
			return "", "", errors.New("malformed key-value pair")
		}
		if key != "auth" {
			continue // extensions: accepted and ignored, as Kafka does by default
		}
		if token != "" {
			return "", "", errors.New("auth given twice")
		}
		if token, err = bearerToken(value); err != nil {
			return "", "", err
		}
	}
	if token == "" {
		return "", "", errors.New("no auth=Bearer <token> pair")
	}
	return authz, token, nil
}

// oauthKey says whether k is an RFC 7628 key: 1*(ALPHA).
func oauthKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return k != ""
}

// bearerToken reads "Bearer <token>" (RFC 6750's b64token: base64url and '.').
func bearerToken(v string) (string, error) {
	scheme, tok, ok := strings.Cut(v, " ")
	tok = strings.TrimLeft(tok, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") || tok == "" {
		return "", errors.New("auth is not \"Bearer <token>\"")
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
		if !ok {
			return "", errors.New("the bearer token holds a character outside b64token")
		}
	}
	return tok, nil
}
