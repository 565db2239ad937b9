package runtime_test

import (
	"context"
	"encoding/binary"
	stdnet "net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/runtime"
)

func TestNodeApiVersionsNegotiatesWithKgo(t *testing.T) {
	n := startNode(t, "")
	cl := newClient(t, n)
	vers, err := kadm.NewClient(cl).ApiVersions(testCtx(t, 10*time.Second))
	require.NoError(t, err)
	require.Len(t, vers, 1)
	for _, bv := range vers {
		require.NoError(t, bv.Err)
		for _, want := range broker.SupportedVersions {
			lo, hi, ok := bv.KeyVersions(want.Key)
			require.True(t, ok, "key %d advertised", want.Key)
			require.Equal(t, want.Min, lo)
			require.Equal(t, want.Max, hi)
		}
	}
	require.NoError(t, cl.Ping(testCtx(t, 5*time.Second)))
}

func TestNodeMalformedFramesCloseOnlyThatConnection(t *testing.T) {
	n := startNode(t, "")
	cl := newClient(t, n)
	createTopic(t, cl, "t", 1)
	produce := func(v string) {
		t.Helper()
		rec := &kgo.Record{Topic: "t", Value: []byte(v)}
		require.NoError(t, cl.ProduceSync(testCtx(t, 10*time.Second), rec).FirstErr())
	}
	produce("before")

	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(1)
	unknownKey := frame(1, meta)
	binary.BigEndian.PutUint16(unknownKey[4:], 1234)
	truncated := frame(2, meta)
	binary.BigEndian.PutUint32(truncated, uint32(len(truncated)+10))
	for name, b := range map[string][]byte{
		"negative size": {0x80, 0, 0, 0},
		"huge size":     {0x7f, 0xff, 0xff, 0xff},
		"unknown key":   unknownKey,
		"truncated":     truncated,
	} {
		t.Run(name, func(t *testing.T) {
			nc := rawConn(t, n)
			_, err := nc.Write(b)
			require.NoError(t, err)
			if name == "truncated" {
				require.NoError(t, nc.(interface{ CloseWrite() error }).CloseWrite())
			}
			requireClosedByServer(t, nc)
			produce(name) // the client on its own connection is unaffected
		})
	}
	// Everything the healthy client wrote is there, in order.
	cons := newClient(t, n, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	ctx := testCtx(t, 10*time.Second)
	for len(got) < 5 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	require.Len(t, got, 5)
	require.Equal(t, "before", got[0])
}

func TestNodeProduceV2GetsUnsupportedVersion(t *testing.T) {
	n := startNode(t, "")
	nc := rawConn(t, n)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(2)
	req.Acks = -1
	req.TimeoutMillis = 1000
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "t"
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = []byte{1, 2, 3}
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	_, err := nc.Write(frame(11, req))
	require.NoError(t, err)
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(2)
	require.Equal(t, int32(11), readResponse(t, nc, resp))
	require.Equal(t, kerr.UnsupportedVersion.Code, resp.Topics[0].Partitions[0].ErrorCode)

	// The connection stays open for the next request.
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(1)
	_, err = nc.Write(frame(12, meta))
	require.NoError(t, err)
	mresp := kmsg.NewPtrMetadataResponse()
	mresp.SetVersion(1)
	require.Equal(t, int32(12), readResponse(t, nc, mresp))
	require.Len(t, mresp.Brokers, 1)
}

func TestNodeStartFailsCleanlyOnBusyPort(t *testing.T) {
	n := startNode(t, "")
	other := runtime.NewNode(runtime.Options{ListenAddr: n.Addr(), DataDir: t.TempDir()})
	err := other.Start(testCtx(t, 5*time.Second))
	require.ErrorContains(t, err, "listen on "+n.Addr())
	require.NoError(t, other.Close(), "Close after a failed Start is a no-op")
}

func TestNodeStopsWhenStartContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := runtime.NewNode(runtime.Options{ListenAddr: "127.0.0.1:0", DataDir: t.TempDir()})
	require.NoError(t, n.Start(ctx))
	addr := n.Addr()
	cancel()
	require.Eventually(t, func() bool {
		nc, err := stdnet.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			nc.Close()
		}
		return err != nil
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, n.Close())
}
