package net

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/zap"
)

// SASLSettings are the SASL settings of a SASL_PLAINTEXT or SASL_SSL listener, under
// Kafka's names where Kafka has the setting (docs/security.md, "SASL").
// sasl.enabled.mechanisms may also be given for one listener as
// listener.name.<name>.sasl.enabled.mechanisms.
type SASLSettings struct {
	Mechanisms           string // sasl.enabled.mechanisms
	InterBrokerMechanism string // sasl.mechanism.inter.broker.protocol
	PlainUsersFile       string // sluice.sasl.plain.users.file
	InterBrokerUser      string // sluice.sasl.inter.broker.user
	InterBrokerPassword  string // sluice.sasl.inter.broker.password

	// OAUTHBEARER (sasl_oauth.go): Kafka's sasl.oauthbearer.* validation settings.
	JWKSFile         string        // sasl.oauthbearer.jwks.endpoint.url, file:// only
	JWKSRefresh      time.Duration // sasl.oauthbearer.jwks.endpoint.refresh.ms
	jwksRefreshSet   bool
	ExpectedAudience []string      // sasl.oauthbearer.expected.audience
	ExpectedIssuer   string        // sasl.oauthbearer.expected.issuer
	SubClaim         string        // sasl.oauthbearer.sub.claim.name ("": sub)
	ScopeClaim       string        // sasl.oauthbearer.scope.claim.name ("": scope)
	ClockSkew        time.Duration // sasl.oauthbearer.clock.skew.seconds
	clockSkewSet     bool
}

// The defaults: SCRAM only (PLAIN needs a users file), and PLAIN between nodes, which
// works before any SCRAM credential exists.
const (
	DefaultSASLMechanisms       = MechScramSHA256 + "," + MechScramSHA512
	DefaultInterBrokerMechanism = MechPlain
	defaultJWKSRefresh          = time.Hour        // Kafka's
	defaultClockSkew            = 30 * time.Second // Kafka's
)

var saslSettingNames = []string{
	"sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol",
	"sluice.sasl.plain.users.file", "sluice.sasl.inter.broker.user",
	"sluice.sasl.inter.broker.password", "sasl.oauthbearer.jwks.endpoint.url",
	"sasl.oauthbearer.jwks.endpoint.refresh.ms", "sasl.oauthbearer.expected.audience",
	"sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.sub.claim.name",
	"sasl.oauthbearer.scope.claim.name", "sasl.oauthbearer.clock.skew.seconds",
}

// SASLSettingNames lists the config-file keys SASLSettings.Set accepts.
func SASLSettingNames() []string { return append([]string(nil), saslSettingNames...) }

// Set applies one SASL setting; known is false when key is not one.
func (s *SASLSettings) Set(key, value string) (known bool, err error) {
	value = strings.TrimSpace(value)
	switch key {
	case "sasl.enabled.mechanisms":
		_, err = ParseMechanisms(value)
		s.Mechanisms = value
	case "sasl.mechanism.inter.broker.protocol":
		var ms []string
		if ms, err = ParseMechanisms(value); err == nil && len(ms) != 1 {
			err = fmt.Errorf("want one mechanism, got %q", value)
		} else if err == nil && ms[0] == MechOAuthBearer {
			err = fmt.Errorf("OAUTHBEARER between nodes is not supported (a node has no " +
				"token to present); use PLAIN or SCRAM")
		}
		if err == nil {
			s.InterBrokerMechanism = ms[0]
		}
	case "sluice.sasl.plain.users.file":
		s.PlainUsersFile = value
	case "sluice.sasl.inter.broker.user":
		s.InterBrokerUser = value
	case "sluice.sasl.inter.broker.password":
		s.InterBrokerPassword = value
	default:
		return s.setOAuth(key, value)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", key, err)
	}
	return true, err
}

// setOAuth applies one sasl.oauthbearer.* setting.
func (s *SASLSettings) setOAuth(key, value string) (known bool, err error) {
	switch key {
	case "sasl.oauthbearer.jwks.endpoint.url":
		s.JWKSFile, err = jwksPath(value)
	case "sasl.oauthbearer.jwks.endpoint.refresh.ms":
		s.JWKSRefresh, err = nonNegative(value, time.Millisecond)
		s.jwksRefreshSet = err == nil
	case "sasl.oauthbearer.expected.audience":
		s.ExpectedAudience = nil
		for _, a := range strings.Split(value, ",") {
			if a = strings.TrimSpace(a); a != "" {
				s.ExpectedAudience = append(s.ExpectedAudience, a)
			}
		}
	case "sasl.oauthbearer.expected.issuer":
		s.ExpectedIssuer = value
	case "sasl.oauthbearer.sub.claim.name":
		s.SubClaim = value
	case "sasl.oauthbearer.scope.claim.name":
		s.ScopeClaim = value
	case "sasl.oauthbearer.clock.skew.seconds":
		s.ClockSkew, err = nonNegative(value, time.Second)
		s.clockSkewSet = err == nil
	default:
		return false, nil
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", key, err)
	}
	return true, err
}

// jwksPath reads sasl.oauthbearer.jwks.endpoint.url: a file:// URL ("file:///abs" or
// "file://rel"). Kafka also fetches http(s) endpoints; Sluice does not: a fetch would
// put an outbound HTTP client, its timeouts and its trust settings on the
// authentication path. A cron job or a sidecar can write the endpoint's JWKS to the
// file, which is re-read when it changes.
func jwksPath(value string) (string, error) {
	if value == "" {
		return "", nil
	}
	rest, ok := strings.CutPrefix(value, "file://")
	if !ok {
		return "", fmt.Errorf("only file:// URLs are supported (a local JWKS file, "+
			"re-read when it changes), got %q; fetch an http(s) endpoint's keys into a file",
			value)
	}
	rest = strings.TrimPrefix(rest, "localhost")
	if rest == "" {
		return "", fmt.Errorf("no path in %q", value)
	}
	return rest, nil
}

// nonNegative reads a count of unit.
func nonNegative(value string, unit time.Duration) (time.Duration, error) {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil || n < 0 || n > int64(1<<62)/int64(unit) {
		return 0, fmt.Errorf("want a number >= 0, got %q", value)
	}
	return time.Duration(n) * unit, nil
}

// ServerConfig builds a SASL listener's authentication: the enabled mechanisms, the
// PLAIN users (read now: PLAIN needs sluice.sasl.plain.users.file), the SCRAM
// credentials and the OAUTHBEARER validator (its JWKS file read now; lg logs its
// reloads).
func (s *SASLSettings) ServerConfig(store ScramStore, lg *zap.Logger) (*SASLConfig, error) {
	value := s.Mechanisms
	if value == "" {
		value = DefaultSASLMechanisms
	}
	mechs, err := ParseMechanisms(value)
	if err != nil {
		return nil, err
	}
	cfg := &SASLConfig{Mechanisms: mechs, Scram: store}
	for _, m := range mechs {
		if m == MechOAuthBearer {
			if cfg.OAuth, err = s.newOAuthValidator(lg); err != nil {
				return nil, err
			}
		}
		if m != MechPlain {
			continue
		}
		if s.PlainUsersFile == "" {
			return nil, fmt.Errorf("sasl.enabled.mechanisms names PLAIN: give its users " +
				"in sluice.sasl.plain.users.file (user:password lines, chmod 600)")
		}
		if cfg.Plain, err = LoadPlainUsers(s.PlainUsersFile); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// ClientMechanism is how a node authenticates to its peers' SASL inter-broker
// listener: sasl.mechanism.inter.broker.protocol with sluice.sasl.inter.broker.user and
// .password.
func (s *SASLSettings) ClientMechanism() (sasl.Mechanism, error) {
	if s.InterBrokerUser == "" || s.InterBrokerPassword == "" {
		return nil, fmt.Errorf("the inter-broker listener uses SASL: set " +
			"sluice.sasl.inter.broker.user and sluice.sasl.inter.broker.password")
	}
	mech := s.InterBrokerMechanism
	if mech == "" {
		mech = DefaultInterBrokerMechanism
	}
	return ClientSASL(mech, s.InterBrokerUser, s.InterBrokerPassword)
}

// ClientSASL is a franz-go client mechanism for a SASL name and credentials (the
// node's peers, and Sluice's own commands). For OAUTHBEARER password is the token and
// user the authorization id (may be empty).
func ClientSASL(mech, user, password string) (sasl.Mechanism, error) {
	switch strings.ToUpper(mech) {
	case MechPlain:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	case MechScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case MechScramSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	case MechOAuthBearer:
		return oauth.Auth{Zid: user, Token: password}.AsMechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 "+
		"or OAUTHBEARER", mech)
}
