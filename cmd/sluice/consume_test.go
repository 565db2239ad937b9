package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseConsume(t *testing.T) {
	o, err := parseConsume([]string{"events", "--from-beginning", "--group", "g", "--max", "5",
		"--exit-at-end", "--print-key", "--print-offset"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, consumeOptions{
		client: clientFlags{bootstrap: defaultBootstrap, timeout: defaultTimeout},
		topic:  "events", fromBeginning: true, group: "g", max: 5, exitAtEnd: true,
		printKey: true, printOffset: true, separator: ":",
	}, o)
}

func TestParseConsumeRejectsBadInput(t *testing.T) {
	cases := map[string][]string{
		"--max must be 0 or more": {"t", "--max", "-1"},
		"missing TOPIC":           {"--from-beginning"},
		`unexpected argument "u"`: {"t", "u"},
	}
	for want, args := range cases {
		var stderr bytes.Buffer
		_, err := parseConsume(args, &stderr)
		require.ErrorIs(t, err, errUsage, "args %v", args)
		require.Contains(t, stderr.String(), want, "args %v", args)
	}
}

func testConsumer(o consumeOptions) (*consumer, *bytes.Buffer) {
	var out bytes.Buffer
	return &consumer{o: o, out: bufio.NewWriter(&out)}, &out
}

func TestPrintFormats(t *testing.T) {
	r := &kgo.Record{Key: []byte("k"), Value: []byte("v"), Partition: 2, Offset: 41}
	cases := []struct {
		o    consumeOptions
		want string
	}{
		{consumeOptions{}, "v\n"},
		{consumeOptions{printKey: true, separator: ":"}, "k:v\n"},
		{consumeOptions{printOffset: true}, "2:41\tv\n"},
		{consumeOptions{printKey: true, printOffset: true, separator: "="}, "2:41\tk=v\n"},
	}
	for _, c := range cases {
		cs, out := testConsumer(c.o)
		cs.print(nil, r)
		require.NoError(t, cs.out.Flush())
		require.Equal(t, c.want, out.String())
	}
}

func TestPrintStopsAtMax(t *testing.T) {
	cs, out := testConsumer(consumeOptions{max: 2})
	for i := 0; i < 5; i++ {
		cs.print(nil, &kgo.Record{Value: []byte{'a' + byte(i)}})
	}
	require.NoError(t, cs.out.Flush())
	require.Equal(t, "a\nb\n", out.String())
	require.True(t, cs.finished())
}

func TestFinishedAtEndOfEveryPartition(t *testing.T) {
	cs, _ := testConsumer(consumeOptions{exitAtEnd: true})
	cs.pos = map[int32]int64{0: 0, 1: 5}
	cs.end = map[int32]int64{0: 2, 1: 5}
	require.False(t, cs.finished())
	cs.print(nil, &kgo.Record{Partition: 0, Offset: 0})
	require.False(t, cs.finished())
	cs.print(nil, &kgo.Record{Partition: 0, Offset: 1})
	require.True(t, cs.finished())

	empty, _ := testConsumer(consumeOptions{exitAtEnd: true})
	empty.pos, empty.end = map[int32]int64{}, map[int32]int64{}
	require.True(t, empty.finished(), "an empty topic is already at its end")

	follow, _ := testConsumer(consumeOptions{})
	require.False(t, follow.finished(), "without --exit-at-end or --max, follow forever")
}

func TestFetchErrWording(t *testing.T) {
	cs, _ := testConsumer(consumeOptions{topic: "t", group: "g",
		client: clientFlags{timeout: defaultTimeout}})
	fetch := func(err error) kgo.Fetches {
		return kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "t",
			Partitions: []kgo.FetchPartition{{Partition: 0, Err: err}}}}}}
	}
	tooOld := errors.New("broker is too old; the broker has already indicated it will not know")
	require.ErrorContains(t, cs.fetchErr(fetch(&kgo.ErrGroupSession{Err: tooOld})),
		`cannot consume as group "g": this broker does not support consumer groups yet`)
	require.ErrorContains(t, cs.fetchErr(fetch(&kgo.ErrGroupSession{Err: kerr.InvalidGroupID})),
		`group "g": the broker answered INVALID_GROUP_ID`)
	require.ErrorContains(t, cs.fetchErr(fetch(context.DeadlineExceeded)),
		"no records arrived for 10s")
	require.EqualError(t, cs.fetchErr(fetch(kerr.TopicAuthorizationFailed)), "not authorized")
	require.NoError(t, cs.fetchErr(fetch(kerr.NotLeaderForPartition)), "kgo retries these")
	require.NoError(t, cs.fetchErr(fetch(kerr.UnknownTopicOrPartition)), "and these")
	require.NoError(t, cs.fetchErr(fetch(context.Canceled)))
	require.NoError(t, cs.fetchErr(kgo.Fetches{}))
}

func TestConsumeClientOptsFollowFlags(t *testing.T) {
	o := consumeOptions{topic: "t", client: clientFlags{bootstrap: "127.0.0.1:1",
		timeout: defaultTimeout}}
	plain := len(o.clientOpts())
	o.group = "g"
	require.Equal(t, plain+2, len(o.clientOpts()), "a group adds ConsumerGroup and AutoCommitMarks")
	cl, err := kgo.NewClient(o.clientOpts()...)
	require.NoError(t, err, "the options must be accepted together")
	cl.Close()
}
