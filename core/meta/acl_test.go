package meta

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/acl"
)

func TestACLRecordsApplyAndSnapshot(t *testing.T) {
	im := NewImage()
	read := acl.Binding{Type: acl.ResourceTopic, Name: "orders", Pattern: acl.PatternLiteral,
		Principal: "User:alice", Host: "*", Operation: acl.OpRead, Permission: acl.Allow}
	deny := read
	deny.Pattern, deny.Name, deny.Permission = acl.PatternPrefixed, "ord", acl.Deny
	require.NoError(t, im.Apply(Record{Kind: KindACLsCreated, ACLs: []acl.Binding{read, deny}}))
	require.Equal(t, 2, im.ACLs().Len())
	v := im.ACLVersion()

	bad := read
	bad.Principal = "alice"
	require.Error(t, im.Apply(Record{Kind: KindACLsCreated, ACLs: []acl.Binding{read, bad}}))
	require.Error(t, im.Apply(Record{Kind: KindACLsDeleted}))
	require.Equal(t, v, im.ACLVersion(), "a refused record changes nothing")

	// Through JSON (the metadata log's encoding) and a snapshot.
	snap := im.Snapshot()
	raw, err := json.Marshal(snap)
	require.NoError(t, err)
	var back []Record
	require.NoError(t, json.Unmarshal(raw, &back))
	other := NewImage()
	for _, r := range back {
		require.NoError(t, other.Apply(r))
	}
	require.True(t, im.Equal(other))
	require.True(t, other.ACLs().Has(deny))

	require.NoError(t, im.Apply(Record{Kind: KindACLsDeleted, ACLs: []acl.Binding{read}}))
	require.NoError(t, im.Apply(Record{Kind: KindACLsDeleted, ACLs: []acl.Binding{read}}),
		"deleting an absent binding is harmless")
	require.Equal(t, []acl.Binding{deny}, im.ACLs().Sorted())
	require.False(t, im.Equal(other))
}
