package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/acl"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/runtime"
)

// withAuthorizer turns the authorizer on (the ACL APIs need one, as in Kafka) with the
// CLI's client, anonymous on PLAINTEXT, a super user.
func withAuthorizer(c *broker.Config) {
	c.Authz = broker.AuthzConfig{Enabled: true, ClassName: "sluice",
		SuperUsers: []string{acl.Anonymous}}
}

// startACLTestNode is startTestNode with withAuthorizer.
func startACLTestNode(t *testing.T) string {
	t.Helper()
	cfg := broker.DefaultConfig()
	withAuthorizer(&cfg)
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Config: cfg})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n.Addr()
}

// Without an authorizer the node refuses the ACL APIs (SECURITY_DISABLED), and says why.
func TestACLWithoutAnAuthorizer(t *testing.T) {
	addr := startTestNode(t)
	_, errOut := cli(t, addr, 1, "", "acl", "add", "--allow-principal", "User:bob",
		"--operation", "read", "--topic", "orders")
	require.Contains(t, errOut, "SECURITY_DISABLED")
	require.Contains(t, errOut, "authorizer.class.name")
	_, errOut = cli(t, addr, 1, "", "acl", "list")
	require.Contains(t, errOut, "SECURITY_DISABLED")
}

func TestACLAddListRemove(t *testing.T) {
	addr := startACLTestNode(t)
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

// A principal that may describe a topic but not its configs (DESCRIBE without
// DESCRIBE_CONFIGS) still gets its description, the configs shown "?" with the reason
// on stderr; before, the whole command failed "not authorized".
func TestTopicDescribeWithoutDescribeConfigs(t *testing.T) {
	cfg := broker.DefaultConfig()
	cfg.Authz = broker.AuthzConfig{Enabled: true, ClassName: "sluice", AllowIfNoACL: true}
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		Config: cfg})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	addr := n.Addr()
	cli(t, addr, 0, "", "topic", "create", "t", "--partitions", "2")
	cli(t, addr, 0, "", "acl", "add", "--allow-principal", acl.Anonymous,
		"--operation", "describe", "--topic", "t")
	out, errOut := cli(t, addr, 0, "", "topic", "describe", "t")
	require.Contains(t, out, "Topic: t\nPartitions: 2\n")
	require.Contains(t, out, "Configs: ?\n")
	require.Contains(t, out, "PARTITION  LEADER")
	require.Contains(t, errOut, "configs unknown")
	require.Contains(t, errOut, "TOPIC_AUTHORIZATION_FAILED")

	// With the configs allowed they are back, defaults said as such.
	cli(t, addr, 0, "", "acl", "add", "--allow-principal", acl.Anonymous,
		"--operation", "describe-configs", "--topic", "t")
	out, _ = cli(t, addr, 0, "", "topic", "describe", "t")
	require.Contains(t, out, "Configs: (all defaults)\n")
}
