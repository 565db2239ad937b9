package net

// SaslHandshake (key 17), versions 0–1, on a SASL listener.
//
// Names the mechanism of the exchange to come. Answered with the enabled mechanisms
// (sasl.enabled.mechanisms); a mechanism not enabled → UNSUPPORTED_SASL_MECHANISM and
// the connection is closed, as Kafka does. After v1 the exchange is carried by
// SaslAuthenticate requests; after v0 the next frames are the bare SASL tokens
// (sasl_authenticate.go). On an authenticated connection, v1 starts a re-authentication
// (KIP-368); v0 is answered ILLEGAL_SASL_STATE. On a listener without SASL:
// ILLEGAL_SASL_STATE (sasl.go).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

func (c *conn) saslHandshake(h header, rest []byte, size int) bool {
	m := c.decodeSASL(h, rest)
	if m == nil {
		return false
	}
	req := m.(*kmsg.SASLHandshakeRequest)
	s := c.sasl
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = append([]string(nil), s.cfg.Mechanisms...)
	mech := c.newMechanism(req.Mechanism)
	if mech == nil || !s.cfg.enabled(req.Mechanism) || (s.reauth && req.Mechanism != s.mechNam) {
		c.srv.counters.saslFailures.Add(1)
		if ok, skipped := c.srv.saslSample.allow(); ok {
			c.lg.Info("closing connection: SASL mechanism not enabled (sasl.enabled.mechanisms)"+
				" or changed at re-authentication", zap.String("mechanism", req.Mechanism),
				zap.Strings("enabled", s.cfg.Mechanisms),
				zap.Uint64("not_logged_since_last", skipped))
		}
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.answerThenClose(h, size, resp)
		return true
	}
	s.mech, s.mechNam = mech, req.Mechanism
	s.phase = saslAuthenticate
	if h.version == 0 {
		s.phase = saslRawTokens
	}
	c.answer(h, size, resp)
	return true
}

// decodeSASL decodes a SASL request; nil (the connection closes) when it is malformed
// or of a version not served.
func (c *conn) decodeSASL(h header, rest []byte) kmsg.Request {
	req, err := decodeRequest(h, rest)
	if err != nil {
		c.lg.Warn("closing connection: "+err.Error(), zap.Int16("key", h.key),
			zap.Int16("version", h.version), zap.Int32("correlation_id", h.corr))
		return nil
	}
	return req
}
