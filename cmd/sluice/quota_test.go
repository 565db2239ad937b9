package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuotaSetListRemove(t *testing.T) {
	addr := startTestNode(t)
	out, _ := cli(t, addr, 0, "", "quota", "list")
	require.Contains(t, out, "no client quotas")
	out, _ = cli(t, addr, 0, "", "quota", "set", "--client-id", "etl",
		"producer_byte_rate=1048576", "consumer_byte_rate=2097152")
	require.Contains(t, out, "updated quotas of {client-id=etl}")
	cli(t, addr, 0, "", "quota", "set", "--user", "alice", "--client-id", "<default>",
		"producer_byte_rate=1024")
	out, _ = cli(t, addr, 0, "", "quota", "list")
	require.Contains(t, out, "user=alice,client-id=<default>  producer_byte_rate=1024")
	require.Contains(t, out, "client-id=etl")
	require.Contains(t, out, "consumer_byte_rate=2097152 producer_byte_rate=1048576")
	out, _ = cli(t, addr, 0, "", "quota", "list", "--client-id", "etl")
	require.NotContains(t, out, "alice")

	_, errOut := cli(t, addr, 1, "", "quota", "set", "--user", "bob", "producer_byte_rat=1")
	require.Contains(t, errOut, "Invalid configuration key producer_byte_rat")
	_, errOut = cli(t, addr, 1, "", "quota", "set", "--user", "bob", "producer_byte_rate=-1")
	require.Contains(t, errOut, "must not be negative")
	cli(t, addr, 2, "", "quota", "set", "producer_byte_rate=1")

	cli(t, addr, 0, "", "quota", "remove", "--client-id", "etl", "producer_byte_rate",
		"consumer_byte_rate")
	out, _ = cli(t, addr, 0, "", "quota", "list")
	require.NotContains(t, out, "etl")
}
