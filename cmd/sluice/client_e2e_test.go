package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/runtime"
)

// startTestNode runs a real node in-process on a free loopback port over a temp dir.
func startTestNode(t *testing.T) string {
	t.Helper()
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir()})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n.Addr()
}

// cli runs one sluice command against addr and requires the given exit status.
func cli(t *testing.T, addr string, want int, stdin string, args ...string) (string, string) {
	t.Helper()
	args = append(args, "--bootstrap", addr, "--timeout", "10s")
	code, stdout, stderr := runCLI(t, stdin, args...)
	require.Equal(t, want, code, "sluice %s\nstdout: %s\nstderr: %s",
		strings.Join(args, " "), stdout, stderr)
	return stdout, stderr
}

func TestCLIEndToEnd(t *testing.T) {
	addr := startTestNode(t)

	out, _ := cli(t, addr, 0, "", "topic", "create", "orders", "--partitions", "3",
		"--replication-factor", "1", "--config", "retention.ms=3600000")
	require.Equal(t, "created topic \"orders\" with 3 partitions, replication factor 1\n", out)
	_, errOut := cli(t, addr, 1, "", "topic", "create", "orders", "--partitions", "3")
	require.Equal(t, "sluice topic create: topic \"orders\" already exists\n", errOut)

	out, _ = cli(t, addr, 0, "", "topic", "list")
	require.Contains(t, out, "orders  3           1")

	// Keyed lines land in one partition per key, in order; unkeyed ones anywhere.
	var in strings.Builder
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&in, "user-%d:event-%d\n", i%3, i)
	}
	in.WriteString("no key\n")
	_, errOut = cli(t, addr, 0, in.String(), "produce", "orders")
	require.Equal(t, "produced 31 record(s) to topic \"orders\"\n", errOut)

	out, _ = cli(t, addr, 0, "", "consume", "orders", "--from-beginning", "--exit-at-end",
		"--print-key", "--print-offset")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 31)
	checkKeyOrder(t, lines)

	out, _ = cli(t, addr, 0, "", "consume", "orders", "--from-beginning", "--max", "5")
	require.Len(t, strings.Split(strings.TrimSuffix(out, "\n"), "\n"), 5)

	out, _ = cli(t, addr, 0, "", "topic", "describe", "orders")
	require.Contains(t, out, "Partitions: 3\n")
	require.Contains(t, out, "Configs: retention.ms=3600000\n")
	require.Equal(t, 31, sumEnds(t, out), "the END column adds up to every record produced")
	requireSizesFollowEnds(t, out)

	cli(t, addr, 0, "", "topic", "alter", "orders", "--partitions", "5",
		"--config", "segment.ms=60000", "--delete-config", "retention.ms")
	out, _ = cli(t, addr, 0, "", "topic", "describe", "orders")
	require.Contains(t, out, "Partitions: 5\n")
	require.Contains(t, out, "Configs: segment.ms=60000\n")
	_, errOut = cli(t, addr, 1, "", "topic", "alter", "orders", "--partitions", "2")
	require.Contains(t, errOut, "partitions cannot be removed")

	_, errOut = cli(t, addr, 1, "x\n", "produce", "orders", "--partition", "9")
	require.Contains(t, errOut, "partition 9 does not exist in topic \"orders\"")

	out, _ = cli(t, addr, 0, "", "topic", "delete", "orders")
	require.Equal(t, "deleted topic \"orders\"\n", out)
	_, errOut = cli(t, addr, 1, "", "topic", "describe", "orders")
	require.Equal(t, "sluice topic describe: topic \"orders\" does not exist\n", errOut)
	_, errOut = cli(t, addr, 1, "", "consume", "orders")
	require.Contains(t, errOut, "topic \"orders\" does not exist")
}

// checkKeyOrder requires each key's values to appear in the order produced, within
// one partition and at increasing offsets.
func checkKeyOrder(t *testing.T, lines []string) {
	t.Helper()
	type seen struct {
		partition string
		last      int
	}
	byKey := map[string]*seen{}
	for _, l := range lines {
		pos, kv, ok := strings.Cut(l, "\t")
		require.True(t, ok, l)
		part, _, _ := strings.Cut(pos, ":")
		key, val, _ := strings.Cut(kv, ":")
		if key == "" {
			require.Equal(t, "no key", val)
			continue
		}
		var n int
		_, err := fmt.Sscanf(val, "event-%d", &n)
		require.NoError(t, err, l)
		s := byKey[key]
		if s == nil {
			byKey[key] = &seen{partition: part, last: n}
			continue
		}
		require.Equal(t, s.partition, part, "key %s moved partitions", key)
		require.Greater(t, n, s.last, "key %s out of order", key)
		s.last = n
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Equal(t, []string{"user-0", "user-1", "user-2"}, keys)
}

// sumEnds adds up the END column of `topic describe` output.
func sumEnds(t *testing.T, out string) int {
	t.Helper()
	total := 0
	for _, row := range describedRows(t, out) {
		total += row[5]
	}
	return total
}

// requireSizesFollowEnds checks the SIZE column: bytes on the partitions holding
// records, none on the empty ones.
func requireSizesFollowEnds(t *testing.T, out string) {
	t.Helper()
	for _, row := range describedRows(t, out) {
		require.Equal(t, row[5] > 0, row[6] > 0, "partition %d: END %d, SIZE %d", row[0],
			row[5], row[6])
	}
}

// describedRows parses the partition table of `sluice topic describe`: per row its
// numeric columns (PARTITION LEADER REPLICAS ISR START END SIZE; the replica lists as 0).
func describedRows(t *testing.T, out string) [][7]int {
	t.Helper()
	_, table, ok := strings.Cut(out, "PARTITION")
	require.True(t, ok, out)
	var rows [][7]int
	for _, line := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		f := strings.Fields(line)
		require.Len(t, f, 7, line)
		var row [7]int
		for _, i := range []int{0, 1, 4, 5, 6} {
			_, err := fmt.Sscan(f[i], &row[i])
			require.NoError(t, err, line)
		}
		rows = append(rows, row)
	}
	return rows
}

func TestCLIGroupResumesFromWhatItPrinted(t *testing.T) {
	addr := startTestNode(t)
	cli(t, addr, 0, "", "topic", "create", "g", "--partitions", "1")
	cli(t, addr, 0, "a\nb\nc\nd\ne\n", "produce", "g")

	out, _ := cli(t, addr, 0, "", "consume", "g", "--group", "grp", "--from-beginning",
		"--max", "2")
	require.Equal(t, "a\nb\n", out)
	// --max commits only the records printed, so the group resumes at c.
	out, _ = cli(t, addr, 0, "", "consume", "g", "--group", "grp", "--exit-at-end")
	require.Equal(t, "c\nd\ne\n", out)
	out, _ = cli(t, addr, 0, "", "consume", "g", "--group", "grp", "--exit-at-end")
	require.Empty(t, out, "everything was committed")
}

// Issue 6 item 7: the broker's collision message was hidden behind a generic "not a
// valid topic name".
func TestCLITopicCreateShowsCollision(t *testing.T) {
	addr := startTestNode(t)
	cli(t, addr, 0, "", "topic", "create", "c_d", "--partitions", "1")
	_, errOut := cli(t, addr, 1, "", "topic", "create", "c.d", "--partitions", "1")
	require.Equal(t, "sluice topic create: cannot use topic name \"c.d\": Topic 'c.d' "+
		"collides with existing topic: c_d\n", errOut)
	_, errOut = cli(t, addr, 1, "", "topic", "create", "bad/name")
	require.Contains(t, errOut, "bad/name")
}
