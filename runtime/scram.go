package runtime

import (
	"sync"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// scramStore is the node's copy of the SCRAM credentials in the replicated metadata,
// for the connection readers that authenticate SASL clients (net/sasl_scram.go): the
// image belongs to the broker's loop, so the loop folds every committed credential
// record in here too, before the broker takes it (stepReceived).
type scramStore struct {
	mu    sync.RWMutex
	creds map[scramKey]meta.ScramCredential
}

type scramKey struct {
	user string
	mech meta.ScramMechanism
}

func newScramStore() *scramStore { return &scramStore{creds: map[scramKey]meta.ScramCredential{}} }

// ScramCredential implements net.ScramStore.
func (s *scramStore) ScramCredential(user string, m meta.ScramMechanism) (
	meta.ScramCredential, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.creds[scramKey{user, m}]
	return c, ok
}

// observe applies the credential records of a metadata input: the start's snapshot and
// records, or one committed record.
func (s *scramStore) observe(in broker.Input) {
	switch in := in.(type) {
	case broker.Start:
		for _, r := range in.Snapshot {
			s.apply(r)
		}
		for _, r := range in.Records {
			s.apply(r)
		}
	case broker.MetaApplied:
		s.apply(in.Record)
	}
}

// apply folds one record in as the image does (meta.Image.Apply): a set replaces, a
// deletion removes; a malformed record changes nothing.
func (s *scramStore) apply(r meta.Record) {
	if r.Kind != meta.KindScramCredentialSet && r.Kind != meta.KindScramCredentialDeleted {
		return
	}
	probe := meta.NewImage()
	if r.Kind == meta.KindScramCredentialSet && probe.Apply(r) != nil {
		return
	}
	k := scramKey{r.User, r.ScramMechanism}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Kind == meta.KindScramCredentialDeleted {
		delete(s.creds, k)
		return
	}
	c, _ := probe.ScramCredential(r.User, r.ScramMechanism)
	s.creds[k] = c
}
