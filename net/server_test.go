package net

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/broker"
)

func TestServerApiVersionsAnswersItself(t *testing.T) {
	sink := newFakeSink(true)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)

	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1.0"
	send(t, nc, 7, req)
	resp := kmsg.NewPtrApiVersionsResponse()
	// The v3 response header has no tagged-field byte: readResponse would fail otherwise.
	require.Equal(t, int32(7), readResponse(t, nc, resp, 3))
	require.Equal(t, int16(0), resp.ErrorCode)
	all := broker.AdvertisedVersions()
	require.Len(t, resp.ApiKeys, len(all))
	for i, v := range all {
		require.Equal(t, v.Key, resp.ApiKeys[i].ApiKey)
		require.Equal(t, v.Max, resp.ApiKeys[i].MaxVersion)
	}
	require.Empty(t, sink.reqs, "ApiVersions must not reach the node")
}

func TestServerApiVersionsTooNewGetsV0Unsupported(t *testing.T) {
	srv := startServer(t, newFakeSink(true), Options{})
	nc := dial(t, srv)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(4) // above our max of 3
	send(t, nc, 9, req)
	resp := kmsg.NewPtrApiVersionsResponse()
	require.Equal(t, int32(9), readResponse(t, nc, resp, 0))
	require.Equal(t, kerr.UnsupportedVersion.Code, resp.ErrorCode)
	require.NotEmpty(t, resp.ApiKeys)

	// The connection stays usable: the client retries at a version we listed.
	req.SetVersion(2)
	send(t, nc, 10, req)
	require.Equal(t, int32(10), readResponse(t, nc, kmsg.NewPtrApiVersionsResponse(), 2))
}

func TestServerRepliesInRequestOrder(t *testing.T) {
	sink := newFakeSink(false)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)
	for corr := int32(1); corr <= 3; corr++ {
		send(t, nc, corr, metadataReq(12))
	}
	reqs := []broker.Request{sink.next(t), sink.next(t), sink.next(t)}
	// Answer newest first: the server must still write them oldest first.
	for i := len(reqs) - 1; i >= 0; i-- {
		sink.answer(reqs[i])
	}
	for corr := int32(1); corr <= 3; corr++ {
		require.Equal(t, corr, readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
	}
}

func TestServerNilReplyFreesSlotWithoutWriting(t *testing.T) {
	sink := newFakeSink(false)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)
	prod := kmsg.NewPtrProduceRequest()
	prod.SetVersion(9)
	prod.Acks = 0
	send(t, nc, 1, prod)
	send(t, nc, 2, metadataReq(12))
	first, second := sink.next(t), sink.next(t)
	sink.answer(second)
	srv.Reply(broker.Reply{Conn: first.Conn, ID: first.ID}) // acks=0: nothing to send
	require.Equal(t, int32(2), readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
}

func TestServerProduceV2GetsUnsupportedVersion(t *testing.T) {
	sink := newFakeSink(true)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)
	prod := kmsg.NewPtrProduceRequest()
	prod.SetVersion(2)
	prod.Acks = 1
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic = "t"
	for p := int32(0); p < 2; p++ {
		part := kmsg.NewProduceRequestTopicPartition()
		part.Partition = p
		topic.Partitions = append(topic.Partitions, part)
	}
	prod.Topics = append(prod.Topics, topic)
	send(t, nc, 5, prod)
	resp := kmsg.NewPtrProduceResponse()
	require.Equal(t, int32(5), readResponse(t, nc, resp, 2))
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 2)
	for _, p := range resp.Topics[0].Partitions {
		require.Equal(t, kerr.UnsupportedVersion.Code, p.ErrorCode)
	}
	// Still open, and the node never saw it.
	send(t, nc, 6, metadataReq(1))
	require.Equal(t, int32(6), readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 1))
	require.Len(t, sink.reqs, 1)
}

func TestServerMalformedFramesCloseOnlyThatConnection(t *testing.T) {
	good := kmsg.NewPtrMetadataRequest()
	good.SetVersion(12)
	unknownKey := frame(1, good)
	binary.BigEndian.PutUint16(unknownKey[4:], 999)
	badVersion := frame(1, good)
	binary.BigEndian.PutUint16(badVersion[6:], 13)
	fetchV0 := kmsg.NewPtrFetchRequest() // below Fetch's advertised minimum of 4
	fetchV0.SetVersion(0)
	truncated := frame(1, good)
	binary.BigEndian.PutUint32(truncated, uint32(len(truncated))) // one byte missing
	garbage := frame(1, good)
	garbage = append(garbage[:14], 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	binary.BigEndian.PutUint32(garbage, uint32(len(garbage)-4))
	cases := map[string][]byte{
		"zero size":     {0, 0, 0, 0},
		"negative size": {0xff, 0xff, 0xff, 0xff},
		"too big":       {0, 0x10, 0, 0},
		"short header":  {0, 0, 0, 3, 0, 3, 0},
		"unknown key":   unknownKey,
		"version above": badVersion,
		"version below": frame(1, fetchV0),
		"truncated":     truncated,
		"garbage body":  garbage,
	}
	sink := newFakeSink(true)
	srv := startServer(t, sink, Options{MaxRequestBytes: 1 << 16})
	other := dial(t, srv)
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			nc := dial(t, srv)
			_, err := nc.Write(b)
			require.NoError(t, err)
			if name == "truncated" {
				require.NoError(t, nc.(*net.TCPConn).CloseWrite())
			}
			requireClosed(t, nc)
			// The other connection keeps working.
			send(t, other, 42, metadataReq(12))
			require.Equal(t, int32(42), readResponse(t, other, kmsg.NewPtrMetadataResponse(), 12))
		})
	}
	require.Eventually(t, func() bool { return len(sink.closedConns()) == len(cases) },
		5*time.Second, time.Millisecond, "every closed connection is reported once")
}

func TestServerStopsReadingWhenInFlightIsFull(t *testing.T) {
	sink := newFakeSink(false)
	srv := startServer(t, sink, Options{MaxInFlight: 2})
	nc := dial(t, srv)
	for corr := int32(1); corr <= 4; corr++ {
		send(t, nc, corr, metadataReq(12))
	}
	a, b := sink.next(t), sink.next(t)
	select {
	case r := <-sink.got:
		t.Fatalf("a third request %d was read while two were in flight", r.ID)
	case <-time.After(50 * time.Millisecond):
	}
	sink.answer(a)
	c := sink.next(t) // room again: the third one is read
	sink.answer(b)
	sink.answer(c)
	sink.answer(sink.next(t))
	for corr := int32(1); corr <= 4; corr++ {
		require.Equal(t, corr, readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
	}
}

func TestServerReplyCloseFlushesEarlierResponses(t *testing.T) {
	sink := newFakeSink(false)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)
	send(t, nc, 1, metadataReq(12))
	send(t, nc, 2, metadataReq(12))
	first, second := sink.next(t), sink.next(t)
	srv.Reply(broker.Reply{Conn: second.Conn, ID: second.ID, Close: true})
	sink.answer(first)
	require.Equal(t, int32(1), readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
	requireClosed(t, nc)
}

func TestServerShutdownDeliversPendingResponses(t *testing.T) {
	sink := newFakeSink(false)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)
	send(t, nc, 1, metadataReq(12))
	r := sink.next(t)
	done := make(chan error)
	go func() {
		ctx, cancel := contextWithTimeout(5 * time.Second)
		defer cancel()
		done <- srv.Shutdown(ctx)
	}()
	require.Eventually(t, func() bool {
		probe, err := net.DialTimeout("tcp", srv.Addr(), time.Second)
		if err == nil {
			// Accepted before the listener closed: the probe is a connection
			// of its own, closed (and reported) by the shutdown too.
			_ = probe.Close()
		}
		return err != nil
	}, 5*time.Second, time.Millisecond, "listener closed")
	sink.answer(r)
	require.Equal(t, int32(1), readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
	requireClosed(t, nc)
	require.NoError(t, <-done)
	closed := sink.closedConns()
	n := 0
	for _, c := range closed {
		if c == r.Conn {
			n++
		}
	}
	require.Equal(t, 1, n, "the connection with the pending response is reported closed once: %v", closed)
}
