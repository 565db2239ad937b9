package net

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
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
}

// The defaults: SCRAM only (PLAIN needs a users file), and PLAIN between nodes, which
// works before any SCRAM credential exists.
const (
	DefaultSASLMechanisms       = MechScramSHA256 + "," + MechScramSHA512
	DefaultInterBrokerMechanism = MechPlain
)

var saslSettingNames = []string{
	"sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol",
	"sluice.sasl.plain.users.file", "sluice.sasl.inter.broker.user",
	"sluice.sasl.inter.broker.password",
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
			err = fmt.Errorf("%s: want one mechanism, got %q", key, value)
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
		return false, nil
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", key, err)
	}
	return true, err
}

// ServerConfig builds a SASL listener's authentication: the enabled mechanisms, the
// PLAIN users (read now: PLAIN needs sluice.sasl.plain.users.file) and the SCRAM
// credentials.
func (s *SASLSettings) ServerConfig(store ScramStore) (*SASLConfig, error) {
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
// node's peers, and Sluice's own commands).
func ClientSASL(mech, user, password string) (sasl.Mechanism, error) {
	switch strings.ToUpper(mech) {
	case MechPlain:
		return plain.Auth{User: user, Pass: password}.AsMechanism(), nil
	case MechScramSHA256:
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism(), nil
	case MechScramSHA512:
		return scram.Auth{User: user, Pass: password}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
		mech)
}
