package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTopicWithoutActionPrintsActions(t *testing.T) {
	code, _, stderr := runCLI(t, "", "topic")
	require.Equal(t, 2, code)
	for _, a := range []string{"create", "list", "describe", "alter", "delete"} {
		require.Contains(t, stderr, "  "+a+" ")
	}
	code, _, stderr = runCLI(t, "", "topic", "rename")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `unknown action "rename"`)
}

func TestParseCreate(t *testing.T) {
	o, err := parseCreate([]string{"orders", "--partitions", "6", "--replication-factor", "1",
		"--config", "retention.ms=1000", "--config", "segment.bytes=1048576",
		"--bootstrap", "127.0.0.1:1"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "orders", o.topic)
	require.Equal(t, 6, o.partitions)
	require.Equal(t, 1, o.replicationFactor)
	require.Equal(t, []string{"retention.ms", "segment.bytes"}, o.configs.order)
	require.Equal(t, "127.0.0.1:1", o.client.bootstrap)
	require.Equal(t, defaultTimeout, o.client.timeout)

	o, err = parseCreate([]string{"orders"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, -1, o.partitions, "unset means the broker's default")
	require.Equal(t, -1, o.replicationFactor)
}

func TestParseCreateRejectsBadInput(t *testing.T) {
	cases := map[string][]string{
		"missing NAME":                         {"--partitions", "3"},
		`unexpected argument "extra"`:          {"a", "extra"},
		"--partitions must be between":         {"a", "--partitions", "0"},
		"--replication-factor must be between": {"a", "--replication-factor", "0"},
		"want name=value":                      {"a", "--config", "retention.ms"},
		"invalid value":                        {"a", "--partitions", "many"},
	}
	for want, args := range cases {
		var stderr bytes.Buffer
		_, err := parseCreate(args, &stderr)
		require.ErrorIs(t, err, errUsage, "args %v", args)
		require.Contains(t, stderr.String(), want, "args %v", args)
		require.Contains(t, stderr.String(), "usage: sluice topic create NAME")
	}
}

func TestParseAlter(t *testing.T) {
	o, err := parseAlter([]string{"t", "--partitions", "8", "--config", "retention.ms=5",
		"--delete-config", "segment.ms"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 8, o.partitions)
	alts := o.alterations()
	require.Len(t, alts, 2)
	require.Equal(t, kadm.SetConfig, alts[0].Op)
	require.Equal(t, "retention.ms", alts[0].Name)
	require.Equal(t, "5", *alts[0].Value)
	require.Equal(t, kadm.DeleteConfig, alts[1].Op)
	require.Equal(t, "segment.ms", alts[1].Name)
	require.Nil(t, alts[1].Value)
}

func TestParseAlterRejectsBadInput(t *testing.T) {
	cases := map[string][]string{
		"nothing to change":       {"t"},
		"is both set and deleted": {"t", "--config", "a=1", "--delete-config", "a"},
		"--partitions must be":    {"t", "--partitions", "-3"},
		"missing NAME":            {},
	}
	for want, args := range cases {
		var stderr bytes.Buffer
		_, err := parseAlter(args, &stderr)
		require.ErrorIs(t, err, errUsage, "args %v", args)
		require.Contains(t, stderr.String(), want, "args %v", args)
	}
}

func TestOverriddenKeepsTopicLevelConfigsSorted(t *testing.T) {
	v := func(s string) *string { return &s }
	got := overridden([]kadm.Config{
		{Key: "segment.ms", Value: v("10"), Source: kmsg.ConfigSourceDynamicTopicConfig},
		{Key: "retention.ms", Value: v("7"), Source: kmsg.ConfigSourceDefaultConfig},
		{Key: "cleanup.policy", Value: v("delete"), Source: kmsg.ConfigSourceDynamicTopicConfig},
	})
	require.Len(t, got, 2)
	require.Equal(t, "cleanup.policy", got[0].Key)
	require.Equal(t, "segment.ms", got[1].Key)
}

func TestPrintDescription(t *testing.T) {
	td := kadm.TopicDetail{Topic: "t", Partitions: kadm.PartitionDetails{
		1: {Partition: 1, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}},
		0: {Partition: 0, Leader: 2, Replicas: []int32{2, 1}, ISR: []int32{2, 1}},
	}}
	starts := kadm.ListedOffsets{"t": {0: {Offset: 3}, 1: {Offset: 0}}}
	ends := kadm.ListedOffsets{"t": {0: {Offset: 10}}} // partition 1 could not be listed
	v := "1000"
	var out bytes.Buffer
	sizes := map[int32]int64{0: 4096} // partition 1's leader did not answer
	require.NoError(t, printDescription(&out, td, starts, ends, sizes,
		[]kadm.Config{{Key: "retention.ms", Value: &v}}))
	want := "Topic: t\nPartitions: 2\nReplication factor: 2\nConfigs: retention.ms=1000\n" +
		"PARTITION  LEADER  REPLICAS  ISR  START  END  SIZE\n" +
		"0          2       2,1       2,1  3      10   4096\n" +
		"1          1       1,2       1    0      ?    ?\n"
	require.Equal(t, want, out.String())
}
