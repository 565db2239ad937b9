package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestACLAddListRemove(t *testing.T) {
	addr := startTestNode(t)
	out, _ := cli(t, addr, 0, "", "acl", "list")
	require.Contains(t, out, "no ACLs")
	out, _ = cli(t, addr, 0, "", "acl", "add", "--allow-principal", "User:bob",
		"--operation", "read", "--operation", "describe", "--topic", "orders")
	require.Contains(t, out, "added ALLOW User:bob from * READ on TOPIC orders (LITERAL)")
	require.Contains(t, out, "added ALLOW User:bob from * DESCRIBE on TOPIC orders (LITERAL)")
	cli(t, addr, 0, "", "acl", "add", "--deny-principal", "User:bob", "--operation",
		"write", "--topic", "ord", "--resource-pattern-type", "prefixed")
	cli(t, addr, 0, "", "acl", "add", "--allow-principal", "User:alice", "--operation",
		"read", "--group", "etl", "--host", "10.0.0.7")

	out, _ = cli(t, addr, 0, "", "acl", "list")
	require.Contains(t, out, "TOPIC:orders  LITERAL   User:bob    *         READ")
	require.Contains(t, out, "TOPIC:ord     PREFIXED  User:bob    *         WRITE")
	require.Contains(t, out, "GROUP:etl     LITERAL   User:alice  10.0.0.7  READ")
	// MATCH lists what applies to a resource: its literal ACLs and the prefixes.
	out, _ = cli(t, addr, 0, "", "acl", "list", "--topic", "orders",
		"--resource-pattern-type", "match")
	require.Contains(t, out, "TOPIC:ord ")
	require.Contains(t, out, "TOPIC:orders ")
	require.NotContains(t, out, "GROUP:etl")
	out, _ = cli(t, addr, 0, "", "acl", "list", "--principal", "User:alice")
	require.NotContains(t, out, "User:bob")

	_, errOut := cli(t, addr, 2, "", "acl", "add", "--allow-principal", "User:bob",
		"--operation", "read")
	require.Contains(t, errOut, "name a resource")
	_, errOut = cli(t, addr, 2, "", "acl", "add", "--allow-principal", "User:bob",
		"--operation", "reed", "--topic", "x")
	require.Contains(t, errOut, `unknown operation "reed"`)
	cli(t, addr, 2, "", "acl", "remove")

	out, _ = cli(t, addr, 0, "", "acl", "remove", "--principal", "User:bob")
	require.Contains(t, out, "removed ALLOW User:bob from * READ on TOPIC orders (LITERAL)")
	require.Contains(t, out, "removed DENY User:bob from * WRITE on TOPIC ord (PREFIXED)")
	out, _ = cli(t, addr, 0, "", "acl", "list")
	require.NotContains(t, out, "User:bob")
	require.Contains(t, out, "User:alice")
	out, _ = cli(t, addr, 0, "", "acl", "remove", "--group", "nothing")
	require.Contains(t, out, "no ACL matched")
}
