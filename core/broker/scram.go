package broker

// SCRAM credentials (RFC 5802, KIP-554): what AlterUserScramCredentials stores and
// DescribeUserScramCredentials reports. The wire layer authenticates against them
// (net/sasl_scram.go); the broker only keeps them in the metadata.

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"hash"

	"github.com/sluicemq/sluice/core/meta"
)

// Kafka's bounds on a SCRAM credential's iteration count (ScramMechanism's
// minIterations and the controller's maximum).
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramMechanismNamed returns the mechanism of a SASL name ("SCRAM-SHA-256").
func ScramMechanismNamed(name string) (meta.ScramMechanism, bool) {
	for _, m := range []meta.ScramMechanism{meta.ScramSHA256, meta.ScramSHA512} {
		if m.String() == name {
			return m, true
		}
	}
	return 0, false
}

// ScramHash returns the mechanism's hash, or nil for an unknown one.
func ScramHash(m meta.ScramMechanism) func() hash.Hash {
	switch m {
	case meta.ScramSHA256:
		return sha256.New
	case meta.ScramSHA512:
		return sha512.New
	default:
		return nil
	}
}

// ScramKeys derives the stored key and the server key from a salted password (RFC
// 5802: StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey =
// HMAC(SaltedPassword, "Server Key")). The mechanism must be known.
func ScramKeys(m meta.ScramMechanism, saltedPassword []byte) (storedKey, serverKey []byte) {
	h := ScramHash(m)
	mac := func(msg string) []byte {
		w := hmac.New(h, saltedPassword)
		w.Write([]byte(msg))
		return w.Sum(nil)
	}
	sum := h()
	sum.Write(mac("Client Key"))
	return sum.Sum(nil), mac("Server Key")
}
