package net

// SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): the server side, against
// the credentials of the replicated metadata (AlterUserScramCredentials). Written here
// rather than taken from github.com/xdg-go/scram, whose server refuses librdkafka
// before 2.6.1 (docs/decisions.md): those clients send the client nonce twice in their
// final message, and Kafka 3.x accepts that (its check is "ends with the server's
// nonce"), so Sluice does too. The exchange is checked against RFC 7677's example and
// against two independent clients (xdg-go/scram's and franz-go's) in the tests.

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"strings"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// scramExchange is one SCRAM authentication: client-first → server-first, then
// client-final → server-final.
type scramExchange struct {
	mech  string
	m     meta.ScramMechanism
	hash  func() hash.Hash
	store ScramStore
	steps int
	// newNonce draws the server's part of the nonce (tests fix it).
	newNonce func() string

	user                   string
	cred                   meta.ScramCredential
	gs2, cnonce, nonce     string
	firstBare, serverFirst string
}

func newScramExchange(mech string, store ScramStore) saslMechanism {
	m := meta.ScramSHA256
	if mech == MechScramSHA512 {
		m = meta.ScramSHA512
	}
	return &scramExchange{mech: mech, m: m, hash: broker.ScramHash(m), store: store,
		newNonce: randomNonce}
}

func randomNonce() string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go 1.24+)
	return base64.RawStdEncoding.EncodeToString(b[:])
}

func (s *scramExchange) step(in []byte) ([]byte, string, error) {
	s.steps++
	var out, user string
	var err error
	switch s.steps {
	case 1:
		out, err = s.first(string(in))
	case 2:
		out, err = s.final(string(in))
		user = s.user
	default:
		err = errors.New("exchange already ended")
	}
	if err != nil {
		return nil, s.user, &saslFailure{msg: "Authentication failed during " +
			"authentication due to invalid credentials with SASL mechanism " + s.mech,
			cause: err}
	}
	return []byte(out), user, nil
}

// first reads client-first-message (gs2-header client-first-message-bare) and answers
// server-first-message.
func (s *scramExchange) first(msg string) (string, error) {
	parts := strings.SplitN(msg, ",", 3)
	if len(parts) != 3 || (parts[0] != "n" && parts[0] != "y") {
		return "", errors.New("malformed client-first message (or channel binding asked)")
	}
	authz := ""
	if parts[1] != "" {
		a, ok := strings.CutPrefix(parts[1], "a=")
		if !ok {
			return "", errors.New("malformed authorization id")
		}
		authz = a
	}
	s.gs2, s.firstBare = parts[0]+","+parts[1]+",", parts[2]
	attrs := strings.Split(s.firstBare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") ||
		!strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) == 2 {
		return "", errors.New("client-first message wants n=user,r=nonce")
	}
	for _, ext := range attrs[2:] {
		if ext == "tokenauth=true" {
			return "", errors.New("delegation tokens are not supported")
		}
	}
	user, ok := decodeSaslName(attrs[0][2:])
	if !ok || user == "" {
		return "", errors.New("malformed user name")
	}
	s.user = user
	if authz != "" {
		if a, ok := decodeSaslName(authz); !ok || a != user {
			return "", errors.New("authorization id differs from the user name")
		}
	}
	var found bool
	if s.store != nil {
		s.cred, found = s.store.ScramCredential(user, s.m)
	}
	if !found {
		return "", errors.New("no " + s.mech + " credential for the user")
	}
	s.cnonce = attrs[1][2:]
	s.nonce = s.cnonce + s.newNonce()
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.Salt) +
		",i=" + strconv.Itoa(int(s.cred.Iterations))
	return s.serverFirst, nil
}

// final checks client-final-message (channel binding, nonce, proof) and answers
// server-final-message, the server's signature.
func (s *scramExchange) final(msg string) (string, error) {
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return "", errors.New("client-final message without a proof")
	}
	withoutProof := msg[:i]
	proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil {
		return "", errors.New("proof is not base64")
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2)) {
		return "", errors.New("channel binding does not match the gs2 header")
	}
	r, ok := strings.CutPrefix(attrs[1], "r=")
	// librdkafka before 2.6.1 sends the client nonce again before the server's: Kafka
	// 3.x accepts it, and so must we for kcat and librdkafka clients of today's distros.
	if !ok || (r != s.nonce && r != s.cnonce+s.nonce) {
		return "", errors.New("nonce does not match the server's")
	}
	authMsg := []byte(s.firstBare + "," + s.serverFirst + "," + withoutProof)
	sig := s.mac(s.cred.StoredKey, authMsg)
	if len(proof) != len(sig) {
		return "", errors.New("proof of the wrong length")
	}
	for j := range sig {
		sig[j] ^= proof[j] // the client key
	}
	h := s.hash()
	h.Write(sig)
	if !hmac.Equal(h.Sum(nil), s.cred.StoredKey) {
		return "", errors.New("wrong password")
	}
	return "v=" + base64.StdEncoding.EncodeToString(s.mac(s.cred.ServerKey, authMsg)), nil
}

func (s *scramExchange) mac(key, msg []byte) []byte {
	m := hmac.New(s.hash, key)
	m.Write(msg)
	return m.Sum(nil)
}

// decodeSaslName undoes RFC 5802's escaping of user names: "=2C" is a comma, "=3D" an
// equals sign; any other "=" is malformed.
func decodeSaslName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}
