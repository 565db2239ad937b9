package meta

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func scramSet(user string, m ScramMechanism, iters int32) Record {
	return Record{Kind: KindScramCredentialSet, User: user, ScramMechanism: m,
		Salt: []byte("salt-" + user), StoredKey: []byte("stored"), ServerKey: []byte("server"),
		Iterations: iters}
}

func TestScramCredentialsApplyReplaceDeleteAndSnapshot(t *testing.T) {
	im := NewImage()
	require.NoError(t, im.Apply(scramSet("bob", ScramSHA512, 4096)))
	require.NoError(t, im.Apply(scramSet("alice", ScramSHA256, 4096)))
	require.NoError(t, im.Apply(scramSet("alice", ScramSHA256, 8192)), "a set replaces")
	c, ok := im.ScramCredential("alice", ScramSHA256)
	require.True(t, ok)
	require.EqualValues(t, 8192, c.Iterations)
	_, ok = im.ScramCredential("alice", ScramSHA512)
	require.False(t, ok, "one credential per mechanism")

	// A snapshot (through the on-disk JSON) rebuilds the same credentials.
	enc, err := json.Marshal(im.Snapshot())
	require.NoError(t, err)
	var recs []Record
	require.NoError(t, json.Unmarshal(enc, &recs))
	again := NewImage()
	for _, r := range recs {
		require.NoError(t, again.Apply(r))
	}
	require.True(t, im.Equal(again))
	require.Len(t, again.ScramUsers(), 2)

	require.NoError(t, im.Apply(Record{Kind: KindScramCredentialDeleted, User: "alice",
		ScramMechanism: ScramSHA256}))
	require.Error(t, im.Apply(Record{Kind: KindScramCredentialDeleted, User: "alice",
		ScramMechanism: ScramSHA256}), "deleting what is gone changes nothing")
	require.False(t, im.Equal(again))
	require.Equal(t, []string{"bob"}, keys(im.ScramUsers()))

	// Malformed records are refused.
	require.Error(t, im.Apply(scramSet("", ScramSHA256, 4096)))
	require.Error(t, im.Apply(scramSet("x", 7, 4096)))
	bad := scramSet("x", ScramSHA256, 4096)
	bad.StoredKey = nil
	require.Error(t, im.Apply(bad))
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
