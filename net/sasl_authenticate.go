package net

// SaslAuthenticate (key 36), versions 0–2, on a SASL listener after SaslHandshake v1.
//
// Carries one step of the mechanism's exchange (PLAIN: one step; SCRAM: two). A failed
// step → SASL_AUTHENTICATION_FAILED with a message, then the connection is closed
// (sasl.go, saslFailed). The last step authenticates the connection; v1+ answers carry
// the session lifetime, connections.max.reauth.ms (0: the session does not expire).
// After SaslHandshake v0 the same exchange runs on bare tokens: each frame is a token
// and each answer a size-prefixed token, with no header (Kafka's first SASL framing,
// which sarama still uses by default); a failure there can only close the connection.
// Out of place (authenticated, or no SASL on the listener): ILLEGAL_SASL_STATE.

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *conn) saslAuthenticate(h header, rest []byte, size int) bool {
	m := c.decodeSASL(h, rest)
	if m == nil {
		return false
	}
	req := m.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	out, user, err := c.sasl.mech.step(req.SASLAuthBytes)
	if err == nil && user != "" {
		var lifetime int64
		d, serr := c.saslSucceeded(user)
		err, lifetime = serr, d.Milliseconds()
		if h.version >= 1 {
			resp.SessionLifetimeMillis = lifetime
		}
	}
	if err != nil {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, &msg
		c.saslFailed(h, size, resp, user, err)
		return true
	}
	resp.SASLAuthBytes = out
	c.answer(h, size, resp)
	return true
}

// saslRawToken runs one step of an exchange begun by SaslHandshake v0: body is the
// client's bare token.
func (c *conn) saslRawToken(body []byte) bool {
	h := header{key: int16(kmsg.SASLAuthenticate), corr: -1}
	out, user, err := c.sasl.mech.step(body)
	if err == nil && user != "" {
		_, err = c.saslSucceeded(user)
	}
	if err != nil {
		c.saslFailed(h, len(body), nil, user, err)
		return true
	}
	c.answer(h, len(body), &rawToken{b: out})
	return true
}

// rawToken is an answer of the bare-token exchange: written as its size and its bytes,
// with no response header (appendResponse).
type rawToken struct{ b []byte }

func (*rawToken) Key() int16            { return int16(kmsg.SASLAuthenticate) }
func (*rawToken) MaxVersion() int16     { return 0 }
func (*rawToken) SetVersion(int16)      {}
func (*rawToken) GetVersion() int16     { return 0 }
func (*rawToken) IsFlexible() bool      { return false }
func (*rawToken) ReadFrom([]byte) error { return nil }
func (*rawToken) RequestKind() kmsg.Request {
	return kmsg.NewPtrSASLAuthenticateRequest()
}

// AppendTo appends the token with its size.
func (t *rawToken) AppendTo(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(t.b)))
	return append(dst, t.b...)
}
