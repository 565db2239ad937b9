package net

// SASL/PLAIN (RFC 4616) against a users file (sluice.sasl.plain.users.file). The file is
// for development and tests: Kafka reads PLAIN users from its JAAS configuration; a
// Sluice node reads one "user:password" per line, at start. PLAIN sends the password
// in the clear: use it on SASL_SSL, or prefer SCRAM.

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"os"
	"strings"
)

// PlainUsers are the users PLAIN authenticates. The passwords are kept as SHA-256
// digests, compared in constant time.
type PlainUsers struct {
	digests map[string][32]byte
}

// NewPlainUsers builds the users from a user → password map (tests, `sluice dev`).
func NewPlainUsers(passwords map[string]string) *PlainUsers {
	u := &PlainUsers{digests: map[string][32]byte{}}
	for name, pw := range passwords {
		u.digests[name] = sha256.Sum256([]byte(pw))
	}
	return u
}

// LoadPlainUsers reads a users file: one "user:password" per line (the password is
// everything after the first colon), blank lines and lines starting with # ignored. The
// file must not be readable or writable by others than its owner (chmod 600): it holds
// passwords.
func LoadPlainUsers(path string) (*PlainUsers, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("sluice.sasl.plain.users.file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("sluice.sasl.plain.users.file %s: mode %v lets others read "+
			"or write the passwords; chmod 600 it", path, st.Mode().Perm())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sluice.sasl.plain.users.file: %w", err)
	}
	defer f.Close()
	passwords := map[string]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimRight(sc.Text(), "\r")
		if t := strings.TrimSpace(text); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		name, pw, ok := strings.Cut(text, ":")
		name = strings.TrimSpace(name)
		switch {
		case !ok || name == "" || pw == "":
			return nil, fmt.Errorf("sluice.sasl.plain.users.file %s line %d: want "+
				"user:password", path, line)
		case passwords[name] != "":
			return nil, fmt.Errorf("sluice.sasl.plain.users.file %s line %d: user %q "+
				"appears twice", path, line, name)
		}
		passwords[name] = pw
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sluice.sasl.plain.users.file %s: %w", path, err)
	}
	return NewPlainUsers(passwords), nil
}

// Len is the number of users.
func (u *PlainUsers) Len() int { return len(u.digests) }

// check says whether password is the user's. Unknown users cost the same comparison.
func (u *PlainUsers) check(user, password string) bool {
	got := sha256.Sum256([]byte(password))
	want, ok := u.digests[user]
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1 && ok
}

// plainExchange is one PLAIN authentication: a single message, authzid NUL authcid
// NUL password.
type plainExchange struct{ users *PlainUsers }

func (p *plainExchange) step(in []byte) ([]byte, string, error) {
	parts := strings.Split(string(in), "\x00")
	if len(parts) != 3 {
		return nil, "", saslError(fmt.Sprintf("Authentication failed: invalid SASL/PLAIN "+
			"response: expected 3 tokens, got %d", len(parts)))
	}
	authz, user, password := parts[0], parts[1], parts[2]
	switch {
	case user == "":
		return nil, "", saslError("Authentication failed: username not specified")
	case password == "":
		return nil, user, saslError("Authentication failed: password not specified")
	case authz != "" && authz != user:
		return nil, user, saslError("Authentication failed: Client requested an " +
			"authorization id that is different from username")
	case p.users == nil || !p.users.check(user, password):
		return nil, user, saslError("Authentication failed: Invalid username or password")
	}
	return []byte{}, user, nil
}
