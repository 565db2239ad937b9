package net

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"
)

// fakeSink is a stand-in node: it records requests and lets the test answer them in
// any order (or at once, with autoReply).
type fakeSink struct {
	srv       *Server
	autoReply bool

	mu     sync.Mutex
	reqs   []broker.Request
	alone  []bool // Request's alone argument, per request
	closed []uint64
	got    chan broker.Request
}

func newFakeSink(autoReply bool) *fakeSink {
	return &fakeSink{autoReply: autoReply, got: make(chan broker.Request, 10000)}
}

func (f *fakeSink) Request(r broker.Request, alone bool) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.alone = append(f.alone, alone)
	f.mu.Unlock()
	if f.autoReply {
		f.answer(r)
		return
	}
	f.got <- r
}

func (f *fakeSink) answer(r broker.Request) {
	resp := r.Msg.ResponseKind()
	resp.SetVersion(r.Msg.GetVersion())
	f.srv.Reply(broker.Reply{Conn: r.Conn, ID: r.ID, Msg: resp})
}

func (f *fakeSink) ConnClosed(conn uint64) {
	f.mu.Lock()
	f.closed = append(f.closed, conn)
	f.mu.Unlock()
}

func (f *fakeSink) closedConns() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint64(nil), f.closed...)
}

// next waits for the next request the sink received.
func (f *fakeSink) next(t *testing.T) broker.Request {
	t.Helper()
	return f.nextWithin(t, 5*time.Second)
}

// nextWithin is next with its own bound.
func (f *fakeSink) nextWithin(t *testing.T, d time.Duration) broker.Request {
	t.Helper()
	select {
	case r := <-f.got:
		return r
	case <-time.After(d):
		t.Fatalf("no request reached the sink within %v", d)
		return broker.Request{}
	}
}

func startServer(t *testing.T, sink *fakeSink, opts Options) *Server {
	t.Helper()
	opts.Logger = zaptest.NewLogger(t)
	srv, err := Listen("127.0.0.1:0", sink, opts)
	require.NoError(t, err)
	sink.srv = srv
	srv.Start()
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv
}

func dial(t *testing.T, srv *Server) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

// frame encodes req as a request frame with header v1 or v2 (by flexibility).
func frame(corr int32, req kmsg.Request) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func send(t *testing.T, nc net.Conn, corr int32, req kmsg.Request) {
	t.Helper()
	_, err := nc.Write(frame(corr, req))
	require.NoError(t, err)
}

// readFrame reads one response frame and returns its correlation id and the rest.
func readFrame(t *testing.T, nc net.Conn) (int32, []byte) {
	t.Helper()
	var size [4]byte
	_, err := io.ReadFull(nc, size[:])
	require.NoError(t, err)
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(nc, body)
	require.NoError(t, err)
	return int32(binary.BigEndian.Uint32(body)), body[4:]
}

// readResponse reads a response frame and decodes it as resp at version.
func readResponse(t *testing.T, nc net.Conn, resp kmsg.Response, version int16) int32 {
	t.Helper()
	corr, body := readFrame(t, nc)
	resp.SetVersion(version)
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		require.Equal(t, byte(0), body[0], "empty response header tags")
		body = body[1:]
	}
	require.NoError(t, resp.ReadFrom(body))
	return corr
}

// requireClosed asserts the server closed nc (a read ends without data and without
// timing out).
func requireClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(5*time.Second)))
	var b [1]byte
	_, err := nc.Read(b[:])
	require.Error(t, err)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server did not close the connection")
	}
}

func metadataReq(version int16) kmsg.Request {
	r := kmsg.NewPtrMetadataRequest()
	r.SetVersion(version)
	return r
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
