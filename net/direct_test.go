package net

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/broker"
)

func replyTo(r broker.Request) broker.Reply {
	resp := r.Msg.ResponseKind()
	resp.SetVersion(r.Msg.GetVersion())
	return broker.Reply{Conn: r.Conn, ID: r.ID, Msg: resp}
}

// A direct write takes only the finished slots at the head: answers given newest first
// still leave oldest first (E1), and Request says which requests were alone in flight.
func TestReplierWritesDirectlyInRequestOrder(t *testing.T) {
	sink := newFakeSink(false)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)
	for corr := int32(1); corr <= 3; corr++ {
		send(t, nc, corr, metadataReq(12))
	}
	reqs := []broker.Request{sink.next(t), sink.next(t), sink.next(t)}
	sink.mu.Lock()
	require.Equal(t, []bool{true, false, false}, sink.alone)
	sink.mu.Unlock()

	rep := srv.NewReplier()
	for i := len(reqs) - 1; i >= 0; i-- {
		rep.Reply(replyTo(reqs[i]))
		rep.Flush(true)
	}
	for corr := int32(1); corr <= 3; corr++ {
		require.Equal(t, corr, readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
	}

	// The connection is idle again: the next request is alone.
	send(t, nc, 4, metadataReq(12))
	rep.Reply(replyTo(sink.next(t)))
	rep.Flush(true)
	require.Equal(t, int32(4), readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
	sink.mu.Lock()
	require.True(t, sink.alone[3])
	sink.mu.Unlock()
}

// A Fetch answer may be megabytes: Flush leaves it to the connection's writer, and the
// response still arrives.
func TestReplierLeavesFetchToTheWriter(t *testing.T) {
	sink := newFakeSink(false)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	send(t, nc, 5, req)
	rep := srv.NewReplier()
	rep.Reply(replyTo(sink.next(t)))
	rep.Flush(true)
	require.Equal(t, int32(5), readResponse(t, nc, kmsg.NewPtrFetchResponse(), 11))
}

// Direct writes and the writer goroutine take turns on one socket without mixing or
// reordering responses: many pipelined requests, answered in bursts, alternately
// flushed directly and through the writer.
func TestReplierAndWriterTakeTurns(t *testing.T) {
	const n = 300
	sink := newFakeSink(false)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)
	go func() {
		for corr := int32(1); corr <= n; corr++ {
			if _, err := nc.Write(frame(corr, metadataReq(12))); err != nil {
				return
			}
		}
	}()
	go func() {
		rep := srv.NewReplier()
		for i := 1; i <= n; i++ {
			r, ok := <-sink.got
			if !ok {
				return
			}
			rep.Reply(replyTo(r))
			if i%3 != 0 {
				continue // answer in bursts of three
			}
			rep.Flush(i%2 == 0)
		}
		rep.Flush(true)
	}()
	for corr := int32(1); corr <= n; corr++ {
		require.Equal(t, corr, readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
	}
}
