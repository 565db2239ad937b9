package net

// SASL on SASL_PLAINTEXT and SASL_SSL listeners (docs/security.md, "SASL"), served by
// the connection's reader before any request reaches the node, as Kafka's
// SaslServerAuthenticator does:
//
//   - before authentication only ApiVersions, SaslHandshake and SaslAuthenticate are
//     read; any other request closes the connection without an answer (Kafka's
//     IllegalSaslStateException), and frames are bounded by sasl.server.max.receive.size;
//   - authentication must end within sluice.sasl.authentication.timeout.ms of the
//     connection's start (after the TLS handshake) or of a re-authentication's
//     SaslHandshake, or the connection is closed;
//   - failed authentication is answered SASL_AUTHENTICATION_FAILED with a message,
//     after connection.failed.authentication.delay.ms, and the connection is closed; the
//     failure is logged (sampled), never with the credentials;
//   - with connections.max.reauth.ms, SaslAuthenticate v1+ tells the client its session
//     lifetime; a request other than SaslHandshake (which starts a re-authentication,
//     KIP-368) after the session expired closes the connection.
//
// The authenticated principal is User:<name> (OAUTHBEARER: the token's subject), on
// every request (broker.Request).

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/meta"
)

// The SASL mechanisms served.
const (
	MechPlain       = "PLAIN"
	MechScramSHA256 = "SCRAM-SHA-256"
	MechScramSHA512 = "SCRAM-SHA-512"
	// MechOAuthBearer, OAUTHBEARER, is in sasl_oauth.go.
)

// ScramStore finds SCRAM credentials: the node's copy of those in the replicated
// metadata. Connection readers call it concurrently.
type ScramStore interface {
	ScramCredential(user string, m meta.ScramMechanism) (meta.ScramCredential, bool)
}

// SASLConfig is a SASL listener's authentication.
type SASLConfig struct {
	// Mechanisms are the enabled mechanisms (sasl.enabled.mechanisms), as the
	// SaslHandshake response lists them.
	Mechanisms []string
	// Plain holds the PLAIN users (sluice.sasl.plain.users.file); nil: PLAIN
	// authenticates nobody.
	Plain *PlainUsers
	// Scram holds the SCRAM credentials; nil: SCRAM authenticates nobody.
	Scram ScramStore
	// OAuth validates OAUTHBEARER tokens (sasl.oauthbearer.*); nil: OAUTHBEARER
	// authenticates nobody.
	OAuth *OAuthValidator
}

func (s *SASLConfig) enabled(mech string) bool {
	for _, m := range s.Mechanisms {
		if m == mech {
			return true
		}
	}
	return false
}

// saslPhase is where a connection's authentication stands.
type saslPhase uint8

const (
	saslHandshake    saslPhase = iota // waiting for SaslHandshake (ApiVersions allowed)
	saslAuthenticate                  // handshake v1 done: waiting for SaslAuthenticate
	saslRawTokens                     // handshake v0 done: the next frames are bare tokens
	saslDone                          // authenticated
)

// saslMechanism is one authentication exchange's server side.
type saslMechanism interface {
	// step takes the client's bytes and returns the answer; user is set once the
	// client is authenticated. An error fails the authentication; its text is for the
	// client and the log and never holds a credential.
	step(in []byte) (out []byte, user string, err error)
}

// saslConn is a connection's SASL state. Only the reader touches it, but round and
// the timer's callback, which closes a connection whose authentication is late.
type saslConn struct {
	cfg     *SASLConfig
	phase   saslPhase
	reauth  bool // the exchange under way re-authenticates an authenticated connection
	mech    saslMechanism
	mechNam string
	user    string    // the authenticated user
	expiry  time.Time // the session's end (connections.max.reauth.ms); zero: none
	round   atomic.Uint64
	timer   *time.Timer
}

// authenticated says whether requests may reach the node.
func (s *saslConn) authenticated() bool { return s.phase == saslDone }

// startSASL arms the authentication timeout of a new round (the connection's start, or
// a re-authentication).
func (c *conn) startSASL() {
	s := c.sasl
	round := s.round.Add(1)
	timeout := c.srv.opts.SASLAuthTimeout
	s.timer = time.AfterFunc(timeout, func() {
		if s.round.Load() != round {
			return
		}
		c.srv.counters.saslTimeouts.Add(1)
		c.lg.Info("closing connection: SASL authentication not finished within "+
			"sluice.sasl.authentication.timeout.ms", zap.Duration("timeout", timeout))
		c.close()
	})
}

// stopSASLTimer disarms the timeout of the round under way.
func (c *conn) stopSASLTimer() {
	if s := c.sasl; s != nil && s.timer != nil {
		s.round.Add(1)
		s.timer.Stop()
	}
}

// saslMaxFrame is the largest frame the connection may send now: bounded by
// sasl.server.max.receive.size until it is authenticated.
func (c *conn) saslMaxFrame() int {
	if c.sasl == nil || c.sasl.authenticated() {
		return c.srv.opts.MaxRequestBytes
	}
	return min(c.srv.opts.MaxRequestBytes, c.srv.opts.SASLMaxReceiveSize)
}

// saslGate decides what happens to a request before it reaches the node. handled is
// true when the request was dealt with here (answered, or the connection is to close:
// ok false).
func (c *conn) saslGate(h header, rest []byte, size int) (handled, ok bool) {
	s := c.sasl
	key := kmsg.Key(h.key)
	if s == nil { // not a SASL listener: Kafka's KafkaApis answers ILLEGAL_SASL_STATE
		if key == kmsg.SASLHandshake || key == kmsg.SASLAuthenticate {
			return true, c.saslIllegal(h, size, "SASL is not enabled on listener "+c.listener)
		}
		return false, true
	}
	if s.phase == saslDone {
		return c.saslAfterAuth(h, rest, size)
	}
	switch {
	case key == kmsg.ApiVersions && s.phase == saslHandshake && !s.reauth:
		return false, true
	case key == kmsg.SASLHandshake && s.phase == saslHandshake:
		return true, c.saslHandshake(h, rest, size)
	case key == kmsg.SASLAuthenticate && s.phase == saslAuthenticate:
		return true, c.saslAuthenticate(h, rest, size)
	}
	// A client without credentials (TLS but no SASL, say) does this on every
	// connection: a failed authentication, logged as one, at most once a second.
	c.srv.counters.saslFailures.Add(1)
	if ok, skipped := c.srv.saslSample.allow(); ok {
		c.lg.Info("closing connection: unexpected request during SASL authentication",
			zap.Int16("key", h.key), zap.Int16("version", h.version),
			zap.Int32("correlation_id", h.corr), zap.String("client_id", h.clientID),
			zap.Uint64("not_logged_since_last", skipped))
	}
	return true, false
}

// saslAfterAuth handles the requests of an authenticated connection: SaslHandshake
// starts a re-authentication (v1+), SaslAuthenticate is out of place, and any other
// request passes unless the session expired.
func (c *conn) saslAfterAuth(h header, rest []byte, size int) (handled, ok bool) {
	s := c.sasl
	switch kmsg.Key(h.key) {
	case kmsg.SASLHandshake:
		if h.version < 1 {
			return true, c.saslIllegal(h, size, "re-authentication needs SaslHandshake v1")
		}
		s.phase, s.reauth = saslHandshake, true
		c.startSASL()
		return true, c.saslHandshake(h, rest, size)
	case kmsg.SASLAuthenticate:
		return true, c.saslIllegal(h, size,
			"SaslAuthenticate request received after successful authentication")
	}
	if !s.expiry.IsZero() && time.Now().After(s.expiry) {
		c.srv.counters.saslExpired.Add(1)
		c.lg.Info("closing connection: SASL session expired (connections.max.reauth.ms) "+
			"and the client did not re-authenticate", zap.String("principal", c.principal))
		return true, false
	}
	return false, true
}

// saslIllegal answers a SASL request that does not fit the connection's state with
// ILLEGAL_SASL_STATE.
func (c *conn) saslIllegal(h header, size int, msg string) bool {
	var resp kmsg.Response
	switch kmsg.Key(h.key) {
	case kmsg.SASLHandshake:
		r := kmsg.NewPtrSASLHandshakeResponse()
		r.ErrorCode = kerr.IllegalSaslState.Code
		resp = r
	default:
		r := kmsg.NewPtrSASLAuthenticateResponse()
		r.ErrorCode, r.ErrorMessage = kerr.IllegalSaslState.Code, &msg
		resp = r
	}
	resp.SetVersion(h.version)
	c.answer(h, size, resp)
	return true
}

// saslFailed answers a failed authentication (resp: nil for a bare-token exchange,
// which has no way to say why) after connection.failed.authentication.delay.ms, logs
// it, and closes the connection once the answer is written.
func (c *conn) saslFailed(h header, size int, resp kmsg.Response, user string, err error) {
	c.srv.counters.saslFailures.Add(1)
	if ok, skipped := c.srv.saslSample.allow(); ok {
		c.lg.Info("closing connection: SASL authentication failed",
			zap.String("mechanism", c.sasl.mechNam), zap.String("user", user),
			zap.Bool("reauthentication", c.sasl.reauth), zap.String("reason", failReason(err)),
			zap.Uint64("not_logged_since_last", skipped))
	}
	if d := c.srv.opts.FailedAuthDelay; d > 0 {
		select { // the reader has nothing else to do; a shutdown cuts the wait
		case <-time.After(d):
		case <-c.done:
		case <-c.drained:
		}
	}
	c.answerThenClose(h, size, resp)
}

// authenticated ends a successful exchange: the principal is set (a re-authentication
// must keep it), the timeout disarmed and the session's expiry set.
func (c *conn) saslSucceeded(user string) (lifetime time.Duration, err error) {
	s := c.sasl
	principal := "User:" + user
	if s.reauth && principal != c.principal {
		return 0, errPrincipalChanged
	}
	var credExpiry time.Time // the credential's own end (an OAUTHBEARER token's exp)
	if e, ok := s.mech.(interface{ credentialExpiry() time.Time }); ok {
		credExpiry = e.credentialExpiry()
	}
	c.stopSASLTimer()
	s.phase, s.reauth, s.user, s.mech = saslDone, false, user, nil
	c.principal = principal
	s.expiry = time.Time{}
	if d := c.srv.opts.ReauthAfter; d > 0 {
		lifetime = d
		if !credExpiry.IsZero() { // KIP-368: min(connections.max.reauth.ms, token exp)
			lifetime = min(d, max(time.Until(credExpiry), time.Millisecond))
		}
		s.expiry = time.Now().Add(lifetime)
	}
	c.lg.Debug("SASL authentication done", zap.String("principal", principal),
		zap.String("mechanism", s.mechNam))
	return lifetime, nil
}

type saslError string

func (e saslError) Error() string { return string(e) }

// saslFailure is a failed step: msg is for the client, cause for the log (never a
// credential).
type saslFailure struct {
	msg   string
	cause error
}

func (e *saslFailure) Error() string { return e.msg }
func (e *saslFailure) Unwrap() error { return e.cause }

// failReason is what the log says of a failure: its cause when it has one.
func failReason(err error) string {
	if f, ok := err.(*saslFailure); ok && f.cause != nil {
		return f.msg + ": " + f.cause.Error()
	}
	return err.Error()
}

const errPrincipalChanged = saslError("Cannot change principals during re-authentication")

// newMechanism starts the server side of an enabled mechanism.
func (c *conn) newMechanism(name string) saslMechanism {
	switch name {
	case MechPlain:
		return &plainExchange{users: c.sasl.cfg.Plain}
	case MechScramSHA256, MechScramSHA512:
		return newScramExchange(name, c.sasl.cfg.Scram)
	case MechOAuthBearer:
		return &oauthExchange{v: c.sasl.cfg.OAuth}
	}
	return nil
}

// SupportedMechanisms lists the mechanisms sasl.enabled.mechanisms may name.
func SupportedMechanisms() []string {
	return []string{MechPlain, MechScramSHA256, MechScramSHA512, MechOAuthBearer}
}

// ParseMechanisms reads sasl.enabled.mechanisms: a comma-separated list of supported
// mechanisms, at least one.
func ParseMechanisms(value string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(value, ",") {
		m = strings.ToUpper(strings.TrimSpace(m))
		if m == "" {
			continue
		}
		found := false
		for _, s := range SupportedMechanisms() {
			found = found || s == m
		}
		if !found {
			return nil, saslError("sasl.enabled.mechanisms: " + m + " is not supported " +
				"(want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)")
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, saslError("sasl.enabled.mechanisms: no mechanism")
	}
	return out, nil
}
