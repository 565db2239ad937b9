package net

// SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) against the credentials of
// the replicated metadata (AlterUserScramCredentials). The exchange itself is
// github.com/xdg-go/scram's server (docs/decisions.md says why a library).

import (
	"errors"

	"github.com/xdg-go/scram"

	"github.com/sluicemq/sluice/core/meta"
)

// scramExchange is one SCRAM authentication: client-first → server-first, then
// client-final → server-final.
type scramExchange struct {
	mech  string
	conv  *scram.ServerConversation
	steps int
}

func newScramExchange(mech string, store ScramStore) saslMechanism {
	m, hash := meta.ScramSHA256, scram.SHA256
	if mech == MechScramSHA512 {
		m, hash = meta.ScramSHA512, scram.SHA512
	}
	srv, err := hash.NewServer(func(user string) (scram.StoredCredentials, error) {
		if store == nil {
			return scram.StoredCredentials{}, errUnknownUser
		}
		c, ok := store.ScramCredential(user, m)
		if !ok {
			return scram.StoredCredentials{}, errUnknownUser
		}
		return scram.StoredCredentials{
			KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: int(c.Iterations)},
			StoredKey:  c.StoredKey, ServerKey: c.ServerKey}, nil
	})
	if err != nil { // only for a nil lookup function
		return &scramExchange{mech: mech}
	}
	return &scramExchange{mech: mech, conv: srv.NewConversation()}
}

var errUnknownUser = errors.New("unknown user")

func (s *scramExchange) step(in []byte) ([]byte, string, error) {
	failed := saslError("Authentication failed during authentication due to invalid " +
		"credentials with SASL mechanism " + s.mech)
	if s.conv == nil || s.steps >= 2 {
		return nil, "", failed
	}
	s.steps++
	out, err := s.conv.Step(string(in))
	user := ""
	if s.steps == 1 || s.conv.Valid() {
		user = s.conv.Username()
	}
	switch {
	case err != nil:
		return nil, user, failed
	case s.steps == 1 && s.conv.AuthzID() != "" && s.conv.AuthzID() != user:
		return nil, user, saslError("Authentication failed: Client requested an " +
			"authorization id that is different from username")
	case s.steps == 2 && !s.conv.Valid():
		return nil, user, failed
	case s.steps == 1:
		return []byte(out), "", nil // not authenticated yet
	}
	return []byte(out), user, nil
}
