package broker

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
)

func upsert(user string, mech int8, iters int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = user, mech, iters
	u.Salt, u.SaltedPassword = []byte("salt"), []byte("salted-password-of-"+user)
	return u
}

func deletion(user string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, mech
	return d
}

func (h *harness) alterScram(dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion,
	ups ...kmsg.AlterUserSCRAMCredentialsRequestUpsertion) map[string]int16 {
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions, req.Upsertions = dels, ups
	resp := h.do(req).(*kmsg.AlterUserSCRAMCredentialsResponse)
	out := map[string]int16{}
	for _, r := range resp.Results {
		out[r.User] = r.ErrorCode
		if r.ErrorCode != 0 {
			require.NotEmpty(h.t, deref(r.ErrorMessage), "error for %s has a message", r.User)
		}
	}
	return out
}

func (h *harness) describeScram(users ...string) *kmsg.DescribeUserSCRAMCredentialsResponse {
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range users {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	return h.do(req).(*kmsg.DescribeUserSCRAMCredentialsResponse)
}

// TestScramKeysMatchRFC5802 checks the stored and server keys against RFC 7677's
// SCRAM-SHA-256 example (user "user", password "pencil"), whose salted password is
// known.
func TestScramKeysMatchRFC5802(t *testing.T) {
	spw, _ := hex.DecodeString(
		"c4a49510323ab4f952cac1fa99441939e78ea74d6be81ddf7096e87513dc615d")
	stored, server := ScramKeys(meta.ScramSHA256, spw)
	mac := hmac.New(sha256.New, spw)
	mac.Write([]byte("Client Key"))
	want := sha256.Sum256(mac.Sum(nil))
	require.Equal(t, want[:], stored)
	require.Len(t, server, 32)
	stored512, _ := ScramKeys(meta.ScramSHA512, spw)
	require.Len(t, stored512, 64)
}

func TestAlterAndDescribeUserScramCredentials(t *testing.T) {
	h := newHarness(t)
	require.Equal(t, map[string]int16{"alice": 0, "bob": 0},
		h.alterScram(nil, upsert("alice", 1, 4096), upsert("bob", 2, 8192)))

	all := h.describeScram()
	require.Len(t, all.Results, 2)
	require.Equal(t, "alice", all.Results[0].User)
	require.Equal(t, int8(1), all.Results[0].CredentialInfos[0].Mechanism)
	require.EqualValues(t, 4096, all.Results[0].CredentialInfos[0].Iterations)
	require.Equal(t, int8(2), all.Results[1].CredentialInfos[0].Mechanism)

	// The image keeps the derived keys, never the salted password.
	c, ok := h.b.image.ScramCredential("alice", meta.ScramSHA256)
	require.True(t, ok)
	stored, server := ScramKeys(meta.ScramSHA256, []byte("salted-password-of-alice"))
	require.Equal(t, stored, c.StoredKey)
	require.Equal(t, server, c.ServerKey)
	require.NotContains(t, string(c.StoredKey)+string(c.ServerKey), "salted-password")

	some := h.describeScram("bob", "nobody", "alice", "alice")
	codes := map[string]int16{}
	for _, r := range some.Results {
		codes[r.User] = r.ErrorCode
	}
	require.Equal(t, map[string]int16{"bob": 0, "nobody": kerr.ResourceNotFound.Code,
		"alice": kerr.DuplicateResource.Code}, codes)

	// Refusals: each user alone, none of a refused user's changes applied.
	require.Equal(t, map[string]int16{
		"alice": kerr.DuplicateResource.Code,
		"":      kerr.UnacceptableCredential.Code,
		"few":   kerr.UnacceptableCredential.Code,
		"many":  kerr.UnacceptableCredential.Code,
		"mech":  kerr.UnsupportedSaslMechanism.Code,
		"ghost": kerr.ResourceNotFound.Code,
		"carol": 0,
	}, h.alterScram([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{
		deletion("alice", 1), deletion("ghost", 2)},
		upsert("alice", 1, 4096), upsert("", 1, 4096), upsert("few", 1, 4095),
		upsert("many", 1, 16385), upsert("mech", 3, 4096), upsert("carol", 1, 4096)))
	_, ok = h.b.image.ScramCredential("alice", meta.ScramSHA256)
	require.True(t, ok, "alice's deletion was refused with her duplicate")

	require.Equal(t, map[string]int16{"alice": 0}, h.alterScram(nil, upsert("alice", 2, 4096)),
		"one user, two mechanisms")
	require.Len(t, h.describeScram("alice").Results[0].CredentialInfos, 2)
	require.Equal(t, map[string]int16{"alice": 0},
		h.alterScram([]kmsg.AlterUserSCRAMCredentialsRequestDeletion{deletion("alice", 1),
			deletion("alice", 2)}))
	h.restart()
	res := h.describeScram()
	var users []string
	for _, r := range res.Results {
		users = append(users, r.User)
	}
	require.Equal(t, []string{"bob", "carol"}, users, "credentials survive a restart")
}
