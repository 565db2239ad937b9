package meta

import (
	"fmt"
	"sort"
)

// ScramMechanism is a SCRAM mechanism, numbered as in Kafka's
// AlterUserScramCredentials and DescribeUserScramCredentials (KIP-554). The numbers are
// part of the on-disk format.
type ScramMechanism int8

const (
	ScramSHA256 ScramMechanism = 1 // SCRAM-SHA-256
	ScramSHA512 ScramMechanism = 2 // SCRAM-SHA-512
)

// String is the mechanism's SASL name ("SCRAM-SHA-256"), or "" when unknown.
func (m ScramMechanism) String() string {
	switch m {
	case ScramSHA256:
		return "SCRAM-SHA-256"
	case ScramSHA512:
		return "SCRAM-SHA-512"
	default:
		return ""
	}
}

// ScramCredential is what a node keeps of one user's password for one mechanism (RFC
// 5802): the salt, the iteration count, and the keys derived from the salted password.
// The password and the salted password are never stored.
type ScramCredential struct {
	Mechanism  ScramMechanism
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// scramKey names one user's credential for one mechanism.
type scramKey struct {
	user string
	mech ScramMechanism
}

// applyScram applies a ScramCredentialSet (insert or replace) or ScramCredentialDeleted
// record.
func (im *Image) applyScram(r Record) error {
	if r.User == "" || r.ScramMechanism.String() == "" {
		return fmt.Errorf("SCRAM credential record for user %q, mechanism %d", r.User,
			r.ScramMechanism)
	}
	k := scramKey{r.User, r.ScramMechanism}
	if r.Kind == KindScramCredentialDeleted {
		if _, ok := im.scram[k]; !ok {
			return fmt.Errorf("user %q has no %v credential", r.User, r.ScramMechanism)
		}
		delete(im.scram, k)
		return nil
	}
	if len(r.Salt) == 0 || len(r.StoredKey) == 0 || len(r.ServerKey) == 0 ||
		r.Iterations <= 0 {
		return fmt.Errorf("SCRAM credential of user %q: empty salt or key, or no iterations",
			r.User)
	}
	im.scram[k] = ScramCredential{Mechanism: r.ScramMechanism, Salt: clone(r.Salt),
		StoredKey: clone(r.StoredKey), ServerKey: clone(r.ServerKey),
		Iterations: r.Iterations}
	return nil
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// ScramCredential returns a copy of a user's credential for one mechanism.
func (im *Image) ScramCredential(user string, m ScramMechanism) (ScramCredential, bool) {
	c, ok := im.scram[scramKey{user, m}]
	if !ok {
		return ScramCredential{}, false
	}
	c.Salt, c.StoredKey, c.ServerKey = clone(c.Salt), clone(c.StoredKey), clone(c.ServerKey)
	return c, true
}

// ScramUsers returns every user with a SCRAM credential, sorted, each with its
// credentials' mechanisms in mechanism order.
func (im *Image) ScramUsers() map[string][]ScramCredential {
	out := map[string][]ScramCredential{}
	for _, k := range im.scramKeys() {
		c, _ := im.ScramCredential(k.user, k.mech)
		out[k.user] = append(out[k.user], c)
	}
	return out
}

// scramKeys returns the credentials' keys by user, then mechanism.
func (im *Image) scramKeys() []scramKey {
	keys := make([]scramKey, 0, len(im.scram))
	for k := range im.scram {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].user != keys[j].user {
			return keys[i].user < keys[j].user
		}
		return keys[i].mech < keys[j].mech
	})
	return keys
}

// scramSnapshot is one ScramCredentialSet record per credential, by user and mechanism.
func (im *Image) scramSnapshot() []Record {
	var out []Record
	for _, k := range im.scramKeys() {
		c, _ := im.ScramCredential(k.user, k.mech)
		out = append(out, Record{Kind: KindScramCredentialSet, User: k.user,
			ScramMechanism: k.mech, Salt: c.Salt, StoredKey: c.StoredKey,
			ServerKey: c.ServerKey, Iterations: c.Iterations})
	}
	return out
}
