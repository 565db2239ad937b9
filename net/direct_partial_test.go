package net

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/broker"
)

func bigReply(r broker.Request, i int) broker.Reply {
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(r.Msg.GetVersion())
	for k := 0; k < 2000; k++ {
		tp := kmsg.NewMetadataResponseTopic()
		name := fmt.Sprintf("topic-%d-%d-padpadpadpadpadpadpadpadpadpadpadpadpadpadpadpad", i, k)
		tp.Topic = &name
		resp.Topics = append(resp.Topics, tp)
	}
	return broker.Reply{Conn: r.Conn, ID: r.ID, Msg: resp}
}

// Large answers written directly by the stepper while the client reads slowly: a write
// that the socket takes only in part is finished by the connection's writer from the
// exact byte it stopped at, and answers keep their order.
func TestServerPartialDirectWritesKeepOrder(t *testing.T) {
	const n = 60
	sink := newFakeSink(false)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)
	require.NoError(t, nc.SetDeadline(time.Now().Add(60*time.Second)))
	go func() {
		for corr := int32(1); corr <= n; corr++ {
			if _, err := nc.Write(frame(corr, metadataReq(12))); err != nil {
				return
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep := srv.NewReplier()
		for i := 1; i <= n; i++ {
			r, ok := <-sink.got
			if !ok {
				return
			}
			rep.Reply(bigReply(r, i))
			rep.Flush(i%4 != 0)
		}
	}()
	time.Sleep(300 * time.Millisecond) // let the socket buffer fill
	for corr := int32(1); corr <= n; corr++ {
		resp := kmsg.NewPtrMetadataResponse()
		got := readResponse(t, nc, resp, 12)
		require.Equal(t, corr, got)
		require.Len(t, resp.Topics, 2000)
		require.Equal(t, fmt.Sprintf("topic-%d-1999-padpadpadpadpadpadpadpadpadpadpadpadpadpadpadpad", corr), *resp.Topics[1999].Topic)
		if corr%7 == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	<-done
}

// Shutdown while direct writes are half done still delivers every answer, then closes.
func TestServerShutdownDeliversPartialDirectWrites(t *testing.T) {
	const n = 8
	sink := newFakeSink(false)
	srv := startServer(t, sink, Options{})
	nc := dial(t, srv)
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
	for corr := int32(1); corr <= n; corr++ {
		send(t, nc, corr, metadataReq(12))
	}
	rep := srv.NewReplier()
	var reqs []broker.Request
	for i := 0; i < n; i++ {
		reqs = append(reqs, sink.next(t))
	}
	shut := make(chan error, 1)
	for i, r := range reqs {
		rep.Reply(bigReply(r, i+1))
		rep.Flush(true)
		if i == 2 {
			go func() {
				ctx, cancel := contextWithTimeout(10 * time.Second)
				defer cancel()
				shut <- srv.Shutdown(ctx)
			}()
			time.Sleep(100 * time.Millisecond)
		}
	}
	time.Sleep(200 * time.Millisecond)
	for corr := int32(1); corr <= n; corr++ {
		resp := kmsg.NewPtrMetadataResponse()
		require.Equal(t, corr, readResponse(t, nc, resp, 12))
		require.Len(t, resp.Topics, 2000)
	}
	requireClosed(t, nc)
	require.NoError(t, <-shut)
}
