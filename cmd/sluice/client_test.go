package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// runCLI runs the sluice entry point as a user would and returns status and output.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// closedPort returns a 127.0.0.1 address on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// silentBroker accepts connections and never answers, like a hung process.
func silentBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never read
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func TestParseArgsAcceptsFlagsAfterPositionals(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 0, "")
	b := fs.Bool("b", false, "")
	pos, err := parseArgs(fs, []string{"one", "--n", "3", "two", "-b"})
	require.NoError(t, err)
	require.Equal(t, []string{"one", "two"}, pos)
	require.Equal(t, 3, *n)
	require.True(t, *b)
}

func TestParseArgsDoubleDashEndsFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	b := fs.Bool("b", false, "")
	pos, err := parseArgs(fs, []string{"a", "--", "-b", "c"})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "-b", "c"}, pos)
	require.False(t, *b)
}

func TestParseArgsReportsUnknownFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err := parseArgs(fs, []string{"a", "--nope"})
	require.Error(t, err)
}

func TestKeyValuesRejectsMalformedAndDuplicates(t *testing.T) {
	var kv keyValues
	require.NoError(t, kv.Set("retention.ms=1000"))
	require.NoError(t, kv.Set("cleanup.policy=delete"))
	require.NoError(t, kv.Set("empty="))
	require.ErrorContains(t, kv.Set("retention.ms=5"), "given twice")
	require.ErrorContains(t, kv.Set("novalue"), "want name=value")
	require.ErrorContains(t, kv.Set("=x"), "want name=value")
	require.Equal(t, "retention.ms=1000,cleanup.policy=delete,empty=", kv.String())
	m := kv.ptrMap()
	require.Len(t, m, 3)
	require.Equal(t, "1000", *m["retention.ms"])
	require.Equal(t, "", *m["empty"])
}

func TestFriendlyWordsKafkaErrors(t *testing.T) {
	cases := []struct {
		err    error
		detail string
		want   string
	}{
		{kerr.TopicAlreadyExists, "", `topic "orders" already exists`},
		{kerr.UnknownTopicOrPartition, "", `topic "orders" does not exist`},
		{kerr.InvalidTopicException, "", `"orders" is not a valid topic name`},
		{kerr.InvalidConfig, "unknown config x", "invalid config: unknown config x"},
		{kerr.InvalidReplicationFactor, "larger than available brokers: 1",
			"invalid replication factor: larger than available brokers: 1"},
		{kerr.MessageTooLarge, "", "max.message.bytes"},
		{fmt.Errorf("wrapped: %w", kerr.TopicAlreadyExists), "", `topic "orders" already exists`},
		{kerr.OffsetOutOfRange, "", "the broker answered OFFSET_OUT_OF_RANGE"},
		{context.DeadlineExceeded, "", "did not answer in time"},
		{errors.New("broker is too old; the broker has already indicated it will not know"),
			"", "does not support this request yet"},
	}
	for _, c := range cases {
		got := friendly(c.err, "orders", c.detail)
		require.ErrorContains(t, got, c.want, "for %v", c.err)
	}
	require.NoError(t, friendly(nil, "orders", "x"))
}

func TestFriendlyDoesNotEchoTheBroker(t *testing.T) {
	err := friendly(kerr.TopicAlreadyExists, "t", "Topic 't' already exists.")
	require.EqualError(t, err, `topic "t" already exists`)
	err = friendly(kerr.UnknownTopicOrPartition, "t", "Topic 't' does not exist.")
	require.EqualError(t, err, `topic "t" does not exist`)
}

func TestClientCommandsReportUnreachableBroker(t *testing.T) {
	addr := closedPort(t)
	for _, args := range [][]string{
		{"topic", "list"},
		{"topic", "create", "t", "--partitions", "1"},
		{"topic", "describe", "t"},
		{"topic", "alter", "t", "--partitions", "4"},
		{"topic", "delete", "t"},
		{"produce", "t"},
		{"consume", "t"},
	} {
		args = append(args, "--bootstrap", addr, "--timeout", "2s")
		code, _, stderr := runCLI(t, "a\n", args...)
		require.Equal(t, 1, code, "args %v", args)
		want := "cannot reach a broker at " + addr + " (is `sluice node` running?)"
		require.Contains(t, stderr, want, "args %v", args)
	}
}

func TestClientCommandsGiveUpOnSilentBroker(t *testing.T) {
	addr := silentBroker(t)
	start := time.Now()
	code, _, stderr := runCLI(t, "", "topic", "list", "--bootstrap", addr, "--timeout", "300ms")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "cannot reach a broker at "+addr+" within 300ms")
	require.Less(t, time.Since(start), 5*time.Second, "the wait must be bounded by --timeout")
}

func TestUnreachableNamesEverySeed(t *testing.T) {
	cf := clientFlags{bootstrap: "127.0.0.1:1,127.0.0.1:2", timeout: time.Second}
	err := unreachable(cf, errors.New("dial tcp: connection refused"))
	require.EqualError(t, err,
		"cannot reach any broker of 127.0.0.1:1,127.0.0.1:2 (is `sluice node` running?)")
}

func TestClientFlagsAreChecked(t *testing.T) {
	code, _, stderr := runCLI(t, "", "topic", "list", "--bootstrap", " , ")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--bootstrap needs at least one host:port")
	code, _, stderr = runCLI(t, "", "topic", "list", "--timeout", "0s")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--timeout must be positive")
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{
		{"topic", "create", "-h"}, {"produce", "--help"}, {"consume", "-h"}, {"topic", "help"},
	} {
		code, _, stderr := runCLI(t, "", args...)
		require.Equal(t, 0, code, "args %v", args)
		require.Contains(t, stderr, "usage: sluice", "args %v", args)
	}
}
