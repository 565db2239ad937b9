package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParseProduce(t *testing.T) {
	o, err := parseProduce([]string{"--acks", "1", "events", "--key-separator", "=",
		"--partition", "2"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "events", o.topic)
	require.Equal(t, "1", o.acks)
	require.Equal(t, "=", o.separator)
	require.Equal(t, 2, o.partition)

	o, err = parseProduce([]string{"events"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "all", o.acks)
	require.Equal(t, ":", o.separator)
	require.Equal(t, -1, o.partition)
}

func TestParseProduceRejectsBadInput(t *testing.T) {
	cases := map[string][]string{
		"--acks must be 0, 1 or all": {"t", "--acks", "2"},
		"--partition must be -1":     {"t", "--partition", "-2"},
		"missing TOPIC":              {"--acks", "1"},
	}
	for want, args := range cases {
		var stderr bytes.Buffer
		_, err := parseProduce(args, &stderr)
		require.ErrorIs(t, err, errUsage, "args %v", args)
		require.Contains(t, stderr.String(), want, "args %v", args)
	}
}

func TestAcksOpt(t *testing.T) {
	for in, want := range map[string]kgo.Acks{
		"0": kgo.NoAck(), "1": kgo.LeaderAck(), "all": kgo.AllISRAcks(), "-1": kgo.AllISRAcks(),
	} {
		got, err := acksOpt(in)
		require.NoError(t, err)
		require.Equal(t, want, got, in)
	}
}

func TestRecordSplitsKeyAtFirstSeparator(t *testing.T) {
	o := produceOptions{separator: ":", partition: -1}
	r := o.record("user-1:a:b")
	require.Equal(t, "user-1", string(r.Key))
	require.Equal(t, "a:b", string(r.Value))

	r = o.record("no key here")
	require.Nil(t, r.Key)
	require.Equal(t, "no key here", string(r.Value))

	r = o.record(":only value")
	require.Equal(t, []byte{}, r.Key, "an empty key is still a key")
	require.Equal(t, "only value", string(r.Value))

	o = produceOptions{separator: "", partition: 3}
	r = o.record("k:v")
	require.Nil(t, r.Key, "an empty separator turns keys off")
	require.Equal(t, "k:v", string(r.Value))
	require.Equal(t, int32(3), r.Partition)
}

func TestProduceSummaryAndErrors(t *testing.T) {
	o := produceOptions{topic: "t", acks: "all", partition: 7,
		client: clientFlags{timeout: defaultTimeout}}
	require.Equal(t, `produced 3 record(s) to topic "t"`, o.summary(3, 3, 0))
	require.Equal(t, `produced 2 of 3 record(s) to topic "t"; 1 failed`, o.summary(3, 2, 1))
	o.acks = "0"
	require.Contains(t, o.summary(1, 1, 0), "unconfirmed")

	bad := errors.New("invalid record partitioning choice of 7 from 3 available")
	require.EqualError(t, o.recordErr(bad, nil),
		`partition 7 does not exist in topic "t"`)
	require.EqualError(t, o.recordErr(kerr.UnknownTopicOrPartition, nil), `topic "t" does not exist`)
	require.ErrorContains(t, o.recordErr(kgo.ErrRecordTimeout, nil), "not acknowledged within 10s")
	// A delivery timeout says why, from what kgo met meanwhile.
	require.EqualError(t, o.recordErr(kgo.ErrRecordTimeout, kerr.KafkaStorageError),
		"records were not acknowledged within 10s: the broker could not write to its disk "+
			"(KAFKA_STORAGE_ERROR: the disk is full or failing; see the node's log)")
	refused := &unreachableErr{addr: "127.0.0.1:9092", err: &net.OpError{Op: "dial", Net: "tcp",
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	require.EqualError(t, o.recordErr(kgo.ErrRecordTimeout, refused),
		"records were not acknowledged within 10s: node 127.0.0.1:9092 unreachable: "+
			"connection refused")
}

func TestSendRejectsOverlongLine(t *testing.T) {
	o := produceOptions{topic: "t", partition: -1}
	long := bytes.Repeat([]byte("x"), maxLineBytes+1)
	var tl tally
	err := o.send(context.Background(), nil, bytes.NewReader(long), &tl)
	require.Equal(t, 0, tl.sent)
	require.ErrorContains(t, err, "line 1 is longer than")
}

func TestRetriedCodeFromKgoLog(t *testing.T) {
	var c causeRecorder
	c.Log(kgo.LogLevelDebug, "produced", "broker", "1",
		"to", "t[0{retrying@-1,1(KAFKA_STORAGE_ERROR: Disk error when trying to access log file.)}]")
	require.Equal(t, kerr.KafkaStorageError, c.cause())
	c.Log(kgo.LogLevelDebug, "produced", "broker", "1", "to", "t[0{0=>3}]")
	require.Equal(t, kerr.KafkaStorageError, c.cause(), "a success line keeps the last cause")
}

func TestDialErrorFromKgoLogNamesTheNode(t *testing.T) {
	var c causeRecorder
	addr, _ := net.ResolveTCPAddr("tcp", "127.0.0.1:9092")
	dial := fmt.Errorf("unable to dial: %w", &net.OpError{Op: "dial", Net: "tcp", Addr: addr,
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	c.Log(kgo.LogLevelInfo, "produce request failed, triggering metadata update", "err", dial)
	require.Equal(t, "node 127.0.0.1:9092 unreachable: connection refused",
		causeText(c.cause(), "t"))
}
