package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupTopic is the topic of the group tests; recordsPer is how many records each of its
// partitions holds, and base is the timestamp of every partition's first record (each
// next record is a minute later).
const groupTopic = "orders"

var (
	recordsPer = []int{10, 5, 4}
	base       = time.Date(2026, 1, 2, 15, 0, 0, 0, time.UTC)
)

// produceKnown writes recordsPer[p] records to each partition p, with known timestamps.
func produceKnown(t *testing.T, addr string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for p, n := range recordsPer {
		for i := 0; i < n; i++ {
			rs = append(rs, &kgo.Record{Topic: groupTopic, Partition: int32(p),
				Value: []byte(fmt.Sprintf("p%d-%d", p, i)), Timestamp: base.Add(time.Duration(i) * time.Minute)})
		}
	}
	require.NoError(t, cl.ProduceSync(ctx, rs...).FirstErr())
}

// joinAndCommit joins group "app", reads every record and commits offset 3 of partition 0
// and everything of partition 1 (nothing of partition 2). It returns the client, still a
// member of the group, and its member id.
func joinAndCommit(t *testing.T, addr string) (*kgo.Client, string) {
	t.Helper()
	assigned := make(chan struct{}, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("app"),
		kgo.ConsumeTopics(groupTopic), kgo.DisableAutoCommit(), kgo.ClientID("group-test"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
			select {
			case assigned <- struct{}{}:
			default:
			}
		}))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var toCommit []*kgo.Record
	total := 0
	for total < 19 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "records did not arrive")
		fs.EachRecord(func(r *kgo.Record) {
			total++
			if (r.Partition == 0 && r.Offset < 3) || r.Partition == 1 {
				toCommit = append(toCommit, r)
			}
		})
	}
	select {
	case <-assigned:
	case <-ctx.Done():
		t.Fatal("the group never assigned partitions")
	}
	require.NoError(t, cl.CommitRecords(ctx, toCommit...))
	member, _ := cl.GroupMetadata()
	require.NotEmpty(t, member)
	return cl, member
}

// committed reads the group's committed offsets as partition → offset.
func committed(t *testing.T, addr, group string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	require.NoError(t, err)
	out := map[int32]int64{}
	os.Each(func(o kadm.OffsetResponse) {
		require.NoError(t, o.Err)
		out[o.Partition] = o.At
	})
	return out
}

func TestCLIGroupCommands(t *testing.T) {
	addr := startTestNode(t)
	cli(t, addr, 0, "", "topic", "create", groupTopic, "--partitions", "3")
	produceKnown(t, addr)
	cl, member := joinAndCommit(t, addr)

	out, _ := cli(t, addr, 0, "", "group", "list")
	require.Equal(t, "GROUP  STATE   PROTOCOL-TYPE\napp    Stable  consumer\n", out)

	// While the member is active: it owns every partition, and nothing may change.
	out, _ = cli(t, addr, 0, "", "group", "describe", "app")
	require.Contains(t, out, "State: Stable\n")
	require.Contains(t, out, "Members: 1\n")
	require.Regexp(t, member+` +group-test +- +orders:0,1,2\n`, out)
	requireLagRows(t, out, [][]string{
		{"orders", "0", "3", "10", "7", member},
		{"orders", "1", "5", "5", "0", member},
		{"orders", "2", "-", "4", "4", member},
	})
	require.Contains(t, out, "Total lag: 11\n")

	_, errOut := cli(t, addr, 1, "", "group", "reset-offsets", "app", "--topic", groupTopic,
		"--to-earliest", "--execute")
	require.Equal(t, "sluice group reset-offsets: group \"app\" is Stable with 1 member(s): "+
		"offsets can only be reset while the group has no members; stop its consumers first\n",
		errOut)
	_, errOut = cli(t, addr, 1, "", "group", "delete", "app")
	require.Contains(t, errOut, `group "app" still has members (NON_EMPTY_GROUP)`)
	require.Equal(t, map[int32]int64{0: 3, 1: 5}, committed(t, addr, "app"))

	cl.Close() // leaves the group, which keeps its offsets and becomes Empty
	out, _ = cli(t, addr, 0, "", "group", "describe", "app")
	require.Contains(t, out, "State: Empty\n")
	require.Contains(t, out, "Members: none\n")
	requireLagRows(t, out, [][]string{
		{"orders", "0", "3", "10", "7", "-"},
		{"orders", "1", "5", "5", "0", "-"},
		{"orders", "2", "-", "4", "4", "-"},
	})
	require.Contains(t, out, "Total lag: 11\n")

	resetOffsets(t, addr)

	out, _ = cli(t, addr, 0, "", "group", "delete", "app")
	require.Equal(t, "deleted group \"app\"\n", out)
	_, errOut = cli(t, addr, 1, "", "group", "describe", "app")
	require.Equal(t, "sluice group describe: group \"app\" does not exist\n", errOut)
	_, errOut = cli(t, addr, 1, "", "group", "delete", "app")
	require.Equal(t, "sluice group delete: group \"app\" does not exist\n", errOut)
	out, _ = cli(t, addr, 0, "", "group", "list")
	require.Equal(t, "no consumer groups\n", out)

	// A group that does not exist yet (Dead) may be given offsets before it starts.
	cli(t, addr, 0, "", "group", "reset-offsets", "fresh", "--topic", groupTopic,
		"--to-latest", "--execute")
	require.Equal(t, map[int32]int64{0: 10, 1: 5, 2: 4}, committed(t, addr, "fresh"))
	out, _ = cli(t, addr, 0, "", "group", "list")
	require.Equal(t, "GROUP  STATE  PROTOCOL-TYPE\nfresh  Empty  -\n", out)
}

// resetOffsets exercises reset-offsets on the Empty group "app" (committed 0:3, 1:5).
func resetOffsets(t *testing.T, addr string) {
	t.Helper()
	out, _ := cli(t, addr, 0, "", "group", "reset-offsets", "app", "--topic", groupTopic,
		"--to-earliest")
	require.Equal(t, "TOPIC   PARTITION  CURRENT  NEW\n"+
		"orders  0          3        0\n"+
		"orders  1          5        0\n"+
		"orders  2          -        0\n"+
		"Dry run: nothing changed. Add --execute to commit these offsets.\n", out)
	require.Equal(t, map[int32]int64{0: 3, 1: 5}, committed(t, addr, "app"), "a dry run commits nothing")

	out, _ = cli(t, addr, 0, "", "group", "reset-offsets", "app", "--topic", groupTopic,
		"--to-earliest", "--execute")
	require.Contains(t, out, "Committed new offsets for 3 partition(s) of group \"app\".\n")
	require.Equal(t, map[int32]int64{0: 0, 1: 0, 2: 0}, committed(t, addr, "app"))

	cli(t, addr, 0, "", "group", "reset-offsets", "app", "--topic", "orders:0,2",
		"--shift-by", "7", "--execute")
	out, _ = cli(t, addr, 0, "", "group", "reset-offsets", "app", "--topic", "orders:1",
		"--to-offset", "100", "--execute")
	require.Contains(t, out, "orders  1          0        5    100 is past the end; using the end\n")
	require.Equal(t, map[int32]int64{0: 7, 1: 5, 2: 4}, committed(t, addr, "app"),
		"shift-by and to-offset clamp to the end")

	at := base.Add(3*time.Minute + time.Second).Format(time.RFC3339)
	cli(t, addr, 0, "", "group", "reset-offsets", "app", "--topic", "orders",
		"--to-datetime", at, "--execute")
	require.Equal(t, map[int32]int64{0: 4, 1: 4, 2: 4}, committed(t, addr, "app"),
		"the first record at or after 15:03:01 is offset 4 everywhere")

	_, errOut := cli(t, addr, 1, "", "group", "reset-offsets", "app", "--topic", "orders:9",
		"--to-latest")
	require.Contains(t, errOut, `partition 9 does not exist in topic "orders" (it has 3)`)
	_, errOut = cli(t, addr, 1, "", "group", "reset-offsets", "app", "--topic", "nope",
		"--to-latest")
	require.Contains(t, errOut, `topic "nope" does not exist`)
}

// requireLagRows checks the describe table's rows, column by column.
func requireLagRows(t *testing.T, out string, want [][]string) {
	t.Helper()
	_, table, ok := strings.Cut(out, "TOPIC ")
	require.True(t, ok, out)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	var got [][]string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "Total lag:") {
			break
		}
		got = append(got, strings.Fields(l))
	}
	require.Equal(t, want, got, out)
}

func TestCLIGroupWithoutActionPrintsActions(t *testing.T) {
	code, _, stderr := runCLI(t, "", "group")
	require.Equal(t, 2, code)
	for _, a := range []string{"list", "describe", "delete", "reset-offsets"} {
		require.Contains(t, stderr, "  "+a+" ")
	}
	code, _, stderr = runCLI(t, "", "group", "rename")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `unknown action "rename"`)
	code, _, stderr = runCLI(t, "", "group", "describe")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "missing GROUP")
	code, _, stderr = runCLI(t, "", "group", "delete", "--bogus")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "flag provided but not defined: -bogus")
}

func TestParseReset(t *testing.T) {
	o, err := parseReset([]string{"g", "--topic", "a:2,0,2", "--topic", "b", "--shift-by", "-3",
		"--execute"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "g", o.group)
	require.Equal(t, resetShiftBy, o.mode)
	require.Equal(t, int64(-3), o.n)
	require.True(t, o.execute)
	require.Equal(t, []string{"a", "b"}, o.topics.order)
	require.Equal(t, []int32{2, 0, 2}, o.topics.parts["a"])
	require.Nil(t, o.topics.parts["b"])

	o, err = parseReset([]string{"g", "--topic", "a", "--to-datetime", "2026-01-02T15:04:05+01:00"},
		io.Discard)
	require.NoError(t, err)
	require.Equal(t, resetToDatetime, o.mode)
	require.Equal(t, int64(1767362645000), o.at.UnixMilli())
	require.False(t, o.execute)
}

func TestParseResetRejectsBadInput(t *testing.T) {
	cases := map[string][]string{
		"say where to reset to":                       {"g", "--topic", "a"},
		"give only one of --to-earliest, --to-offset": {"g", "--topic", "a", "--to-earliest", "--to-offset", "3"},
		"say which offsets to reset":                  {"g", "--to-latest"},
		"missing GROUP":                               {"--topic", "a", "--to-latest"},
		`"x" is not a partition number`:               {"g", "--topic", "a:1,x", "--to-latest"},
		`topic "a" given twice`:                       {"g", "--topic", "a", "--topic", "a:1", "--to-latest"},
		"want an offset of 0 or more":                 {"g", "--topic", "a", "--to-offset", "-1"},
		"want a whole number of records":              {"g", "--topic", "a", "--shift-by", "many"},
		"want an RFC 3339 time":                       {"g", "--topic", "a", "--to-datetime", "yesterday"},
		"--timeout must be positive":                  {"g", "--topic", "a", "--to-latest", "--timeout", "0s"},
	}
	for want, args := range cases {
		var stderr bytes.Buffer
		_, err := parseReset(args, &stderr)
		require.ErrorIs(t, err, errUsage, "args %v", args)
		require.Contains(t, stderr.String(), want, "args %v", args)
		require.Contains(t, stderr.String(), "usage: sluice group reset-offsets GROUP")
	}
	code, _, _ := runCLI(t, "", "group", "reset-offsets", "g", "--topic", "a")
	require.Equal(t, 2, code)
}

func TestResetRowAimClamps(t *testing.T) {
	cases := []struct {
		mode          resetMode
		n, current    int64
		byTime        int64
		target        int64
		clampedToward string
	}{
		{resetEarliest, 0, 5, 0, 2, ""},
		{resetLatest, 0, 5, 0, 9, ""},
		{resetToOffset, 1, 5, 0, 2, "before the start"},
		{resetToOffset, 50, 5, 0, 9, "past the end"},
		{resetShiftBy, -10, 5, 0, 2, "before the start"},
		{resetShiftBy, 1 << 62, 1 << 62, 0, 9, "past the end"}, // overflows int64
		{resetShiftBy, 2, 5, 0, 7, ""},
		{resetToDatetime, 0, 5, -1, 9, ""}, // no record after the time: the end
		{resetToDatetime, 0, 5, 4, 4, ""},
	}
	for i, c := range cases {
		r := resetRow{topic: "t", current: c.current}
		require.NoError(t, r.aim(resetOptions{mode: c.mode, n: c.n}, 2, 9, c.byTime), "case %d", i)
		require.Equal(t, c.target, r.target, "case %d", i)
		if c.clampedToward == "" {
			require.Empty(t, r.note, "case %d", i)
		} else {
			require.Contains(t, r.note, c.clampedToward, "case %d", i)
		}
	}
	r := resetRow{topic: "t", partition: 1, current: -1}
	err := r.aim(resetOptions{group: "g", mode: resetShiftBy, n: 1}, 0, 9, 0)
	require.EqualError(t, err, `cannot shift partition 1 of topic "t": group "g" has no `+
		"committed offset there (use --to-earliest, --to-latest or --to-offset)")
}
