package net

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
)

// readBufferBytes is the socket read buffer of a connection: large enough that small
// requests arrive in few syscalls, small enough for thousands of connections.
const readBufferBytes = 32 << 10

// conn is one client connection: its reader and writer goroutines share the in-flight
// FIFO under mu.
type conn struct {
	id  uint64
	srv *Server
	nc  net.Conn // the connection as read and written: a *tls.Conn on a TLS listener
	raw net.Conn // the TCP connection under nc (nc itself when plaintext), for close
	lg  *zap.Logger
	ip  string // the client address, for max.connections.per.ip

	listener string // the listener's name, on every request
	// principal is the authenticated identity, on every request: User:ANONYMOUS, or the
	// client certificate's subject (tls.go). The reader sets it before the first request.
	principal string
	sasl      *saslConn // the SASL state on a SASL listener, else nil (sasl.go)

	clientID  string // the last request's client id; only the reader uses it
	idleArmed bool   // the socket's read deadline is the idle one; only the reader uses it
	idleSeen  uint64 // activity when the idle deadline was armed; only the reader uses it

	mu         sync.Mutex
	q          fifo
	inBytes    int  // request bytes in q (reserved from srv.reqBudget)
	outBytes   int  // response bytes queued and not yet written, Fetches asked included
	nodeOut    int  // the answered part of outBytes, counted in srv.respBudget
	released   bool // the connection ended and gave its budgets back
	readerDone bool // the reader ended while draining: close once q is empty
	// writing: a goroutine (the writer, or a Replier writing directly) owns the socket's
	// write side; the other one leaves the FIFO alone until it is released.
	writing      bool
	pending      []byte // bytes a direct write left for the writer, written before q
	pendingClose bool   // close the connection once pending is written

	rc        syscall.RawConn // the socket, for direct non-blocking writes; nil if none
	flushMark bool            // in a Replier's touched list; only that Replier uses it

	activity   atomic.Uint64 // frames read and responses written, for the idle timeout
	mutedUntil atomic.Int64  // unix ns until which the reader reads nothing (mute.go)
	throttled  atomic.Bool   // muted once: read one request at a time (mute.go)

	draining  atomic.Bool
	drained   chan struct{} // closed by drain
	drainOnce sync.Once
	wake      chan struct{} // to the writer: the head of q may be done
	room      chan struct{} // to the reader: q has room again
	done      chan struct{} // closed when the connection closes
	closeOnce sync.Once
}

func newConn(s *Server, id uint64, nc net.Conn, l *boundListener) *conn {
	raw := nc
	var rc syscall.RawConn
	if l.TLS != nil {
		// Bytes on the socket are TLS records: direct writes of plain responses
		// (direct.go) must never happen, so rc stays nil and every write goes through
		// the tls.Conn.
		nc = tls.Server(raw, l.TLS)
	} else if sc, ok := nc.(syscall.Conn); ok {
		rc, _ = sc.SyscallConn()
	}
	c := &conn{rc: rc, raw: raw, listener: l.Name, principal: Anonymous,
		id: id, srv: s, nc: nc,
		lg: s.lg.With(zap.Uint64("conn", id), zap.Stringer("remote", nc.RemoteAddr()),
			zap.String("listener", l.Name)),
		q:       newFIFO(s.opts.MaxInFlight),
		wake:    make(chan struct{}, 1),
		room:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		drained: make(chan struct{}),
	}
	if l.SASL != nil {
		c.sasl = &saslConn{cfg: l.SASL}
	}
	return c
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// close closes the socket and wakes both goroutines; safe to call more than once.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		// The TCP socket itself: a tls.Conn's Close may wait to send close_notify, and
		// Kafka clients do not need one.
		_ = c.raw.Close()
	})
}

// drain stops reading new requests; the connection closes once the requests already
// read are answered.
func (c *conn) drain() {
	c.draining.Store(true)
	c.drainOnce.Do(func() { close(c.drained) })
	_ = c.nc.SetReadDeadline(time.Now())
}

// handle decodes one request frame and routes it; false closes the connection.
func (c *conn) handle(body []byte) bool {
	if c.sasl != nil && c.sasl.phase == saslRawTokens {
		return c.saslRawToken(body)
	}
	h, rest, err := parseHeader(body, c.clientID)
	if err != nil {
		corr, _ := peekCorrelation(body)
		c.lg.Warn("closing connection: malformed request header", zap.Int32("correlation_id", corr),
			zap.Error(err))
		return false
	}
	c.clientID = h.clientID
	if handled, ok := c.saslGate(h, rest, len(body)); handled {
		return ok
	}
	if h.key == int16(kmsg.ApiVersions) {
		return c.apiVersions(h, rest, len(body))
	}
	req, err := decodeRequest(h, rest)
	if err != nil {
		c.lg.Warn("closing connection: "+err.Error(), zap.Int16("key", h.key),
			zap.Int16("version", h.version), zap.Int32("correlation_id", h.corr),
			zap.String("client_id", h.clientID))
		return false
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && h.version < broker.ProduceMinBatchVersion {
		c.answer(h, len(body), produceUnsupported(p))
		return true
	}
	out := responseReserve(req, c.srv.opts.MaxQueuedResponseBytes)
	if out > 0 && !c.reserveResponse(out) {
		return false
	}
	id, alone := c.reserve(h, len(body), out)
	c.srv.sink.Request(broker.Request{Conn: c.id, ID: id, ClientID: h.clientID, Msg: req,
		Listener: c.listener, Principal: c.principal, Host: c.ip}, alone)
	return true
}

// decodeRequest decodes the body of a request the node serves; the error says why the
// request cannot be served (an unknown key or version, or a malformed body).
func decodeRequest(h header, rest []byte) (kmsg.Request, error) {
	vr, ok := broker.VersionFor(h.key)
	if !ok {
		return nil, errors.New("API key not served")
	}
	if h.version < vr.Min || h.version > vr.Max {
		return nil, fmt.Errorf("version outside the advertised %d..%d", vr.Min, vr.Max)
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil { // SupportedVersions lists a key kmsg does not know: a bug, not a panic
		return nil, errors.New("API key unknown to the codec")
	}
	req.SetVersion(h.version)
	if err := decodeBody(req, rest); err != nil {
		return nil, fmt.Errorf("malformed request: %w", err)
	}
	return req, nil
}

// decodeBody skips the header's tagged fields (flexible versions) and decodes the body
// with kmsg. kmsg reports malformed input as errors; the recover is a last line of
// defence so that no byte sequence can take the process down.
func decodeBody(req kmsg.Request, rest []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panicked: %v", r)
		}
	}()
	if req.IsFlexible() {
		if rest, err = skipTags(rest); err != nil {
			return fmt.Errorf("header tags: %w", err)
		}
	}
	return req.ReadFrom(rest)
}

// reserve queues a slot for a request the node will answer and returns its id, and
// whether it is the only request in flight. waitRoom made sure there is room, and only
// the reader pushes.
func (c *conn) reserve(h header, bytes, out int) (id uint64, alone bool) {
	id = c.srv.nextReq.Add(1)
	c.mu.Lock()
	alone = c.q.len() == 0
	c.q.push(slot{id: id, corr: h.corr, key: h.key, version: h.version, bytes: bytes,
		out: out, began: c.srv.clock()})
	c.inBytes += bytes
	c.outBytes += out
	c.mu.Unlock()
	return id, alone
}

// answer queues a response the server made itself (nil: none is sent), behind every
// response still pending on the connection.
func (c *conn) answer(h header, bytes int, resp kmsg.Response) {
	version := h.version
	if resp != nil {
		version = resp.GetVersion()
	}
	began := c.srv.clock()
	c.mu.Lock()
	c.q.push(slot{id: c.srv.nextReq.Add(1), corr: h.corr, key: h.key, version: version,
		bytes: bytes, done: true, resp: resp})
	c.inBytes += bytes
	wake := c.q.headDone()
	c.mu.Unlock()
	c.srv.observe(h.key, h.version, resp, began)
	if wake {
		signal(c.wake)
	}
}

// answerThenClose queues a response the server made itself (nil: none), then closes
// the connection once it is written.
func (c *conn) answerThenClose(h header, bytes int, resp kmsg.Response) {
	c.mu.Lock()
	c.q.push(slot{id: c.srv.nextReq.Add(1), corr: h.corr, key: h.key, version: h.version,
		bytes: bytes, done: true, resp: resp, close: true})
	c.inBytes += bytes
	wake := c.q.headDone()
	c.mu.Unlock()
	if wake {
		signal(c.wake)
	}
}

// complete records the node's reply in its slot and wakes the writer when the head of
// the FIFO became writable.
func (c *conn) complete(r broker.Reply) {
	if c.fill(r) {
		signal(c.wake)
	}
}
