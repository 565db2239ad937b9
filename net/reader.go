package net

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// readLoop reads, decodes and delivers requests until the connection ends. Between
// frames it waits at most connections.max.idle.ms (awaitFrame); a frame, once its first
// byte is here, must be read whole within sluice.request.read.timeout.ms (readFrame).
func (c *conn) readLoop() {
	defer c.srv.goroutines.Done()
	defer c.finish()
	if !c.handshake() {
		return
	}
	if c.sasl != nil {
		c.startSASL()
		defer c.stopSASLTimer()
	}
	br := bufio.NewReaderSize(c.nc, readBufferBytes)
	for c.waitRoom() && c.waitMuted() {
		if !c.awaitFrame(br) {
			return
		}
		body, ok := c.readFrame(br)
		if !ok {
			return
		}
		c.activity.Add(1)
		if !c.handle(body) { // nothing was queued: the frame's bytes are ours to give back
			c.srv.reqBudget.release(int64(len(body)))
			return
		}
	}
}

// awaitFrame waits for the first byte of the next frame. It closes the connection once
// it has been idle for connections.max.idle.ms: no request in flight, no response being
// written, and nothing read or written for a whole period (so between one and two
// periods after the last activity). The idle deadline is set once and re-armed only
// when it fires, so a busy connection pays neither a deadline nor a clock read per
// request: activity is a counter, compared when the deadline fires.
func (c *conn) awaitFrame(br *bufio.Reader) bool {
	idle := c.srv.opts.IdleTimeout
	for br.Buffered() == 0 {
		if !c.idleArmed {
			c.idleArmed, c.idleSeen = true, c.activity.Load()
			if !c.setReadDeadline(time.Now().Add(idle)) {
				return false
			}
		}
		_, err := br.Peek(1)
		if err == nil {
			return true
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || c.draining.Load() {
			c.readFailed("size", err)
			return false
		}
		if seen := c.activity.Load(); seen == c.idleSeen && !c.busy() {
			c.srv.counters.idleClosed.Add(1)
			c.lg.Info("closing idle connection (connections.max.idle.ms)",
				zap.Duration("idle_timeout", idle))
			return false
		}
		c.idleArmed = false // active in the period: wait a whole period again
	}
	return true
}

// busy says whether the connection has a request awaiting its response or a response
// being written: it is not idle then, however long the client has been silent.
func (c *conn) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.q.len() > 0 || c.writing || c.pending != nil || c.outBytes > 0
}

// setReadDeadline sets the socket's read deadline; false when the connection is
// draining (drain's own deadline must win, so the flag is checked after setting).
func (c *conn) setReadDeadline(t time.Time) bool {
	_ = c.nc.SetReadDeadline(t)
	return !c.draining.Load()
}

// readFrame reads one frame whose first byte has arrived: its size, a reservation of
// that many bytes from the node's queued.max.request.bytes, then the body, all within
// sluice.request.read.timeout.ms. It returns the body, whose bytes stay reserved.
func (c *conn) readFrame(br *bufio.Reader) ([]byte, bool) {
	// A frame already in the read buffer (the usual small request) needs no deadline,
	// nor a clock read.
	var start, deadline time.Time
	if !frameBuffered(br) {
		start = time.Now()
		deadline = start.Add(c.srv.opts.RequestReadTimeout)
		c.idleArmed = false
		if !c.setReadDeadline(deadline) {
			return nil, false
		}
	}
	var sizeBuf [4]byte
	if _, err := io.ReadFull(br, sizeBuf[:]); err != nil {
		c.frameFailed("size", err, start, 0)
		return nil, false
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if max := c.saslMaxFrame(); size > 0 && int(size) > max && max < c.srv.opts.MaxRequestBytes {
		c.srv.counters.saslOversized.Add(1)
		c.lg.Warn("closing connection: frame over sasl.server.max.receive.size before "+
			"SASL authentication", zap.Int32("size", size), zap.Int("max", max))
		return nil, false
	}
	if size <= 0 || int(size) > c.srv.opts.MaxRequestBytes {
		c.lg.Warn("closing connection: bad request size", zap.Int32("size", size),
			zap.Int("max", c.srv.opts.MaxRequestBytes))
		return nil, false
	}
	if !c.reserveRequest(int64(size), deadline, start) {
		return nil, false
	}
	body, err := readBody(br, int(size))
	if err != nil {
		c.srv.reqBudget.release(int64(size))
		c.frameFailed("body", err, start, size)
		return nil, false
	}
	return body, true
}

// frameBuffered says whether a whole frame is in br's buffer, so that reading it
// cannot block.
func frameBuffered(br *bufio.Reader) bool {
	if br.Buffered() < 4 {
		return false
	}
	b, _ := br.Peek(4)
	size := int64(int32(binary.BigEndian.Uint32(b)))
	return size >= 0 && int64(br.Buffered()) >= 4+size
}

// reserveRequest reserves a frame's bytes from the node-wide budget before its body is
// read, waiting (the socket unread: backpressure) at most until the frame's deadline.
func (c *conn) reserveRequest(n int64, deadline, start time.Time) bool {
	b := c.srv.reqBudget
	if b.tryTake(n) {
		return true
	}
	c.srv.counters.requestBudgetWaits.Add(1)
	if deadline.IsZero() { // a buffered frame: its wait is bounded all the same
		start = time.Now()
		deadline = start.Add(c.srv.opts.RequestReadTimeout)
	}
	if b.take(n, deadline, c.done, c.drained) {
		return true
	}
	if c.stopped() {
		return false
	}
	c.srv.counters.requestBudgetTimeouts.Add(1)
	c.lg.Warn("closing connection: the node's request memory (queued.max.request.bytes) "+
		"stayed in use for the whole request read timeout", zap.Int64("size", n),
		zap.Int64("queued_max_request_bytes", b.limit),
		zap.Duration("waited", time.Since(start).Round(time.Millisecond)))
	return false
}

// stopped says whether a reader waiting for a budget gave up because the connection
// closed or drains.
func (c *conn) stopped() bool {
	select {
	case <-c.done:
		return true
	case <-c.drained:
		return true
	default:
		return false
	}
}

// frameFailed logs why a started frame was not read; a deadline means the client
// trickled it (sluice.request.read.timeout.ms).
func (c *conn) frameFailed(what string, err error, start time.Time, size int32) {
	if errors.Is(err, os.ErrDeadlineExceeded) && !c.draining.Load() {
		c.srv.counters.readTimeouts.Add(1)
		c.lg.Warn("closing connection: request frame not read within the request read "+
			"timeout (sluice.request.read.timeout.ms)", zap.String("in", what),
			zap.Int32("size", size), zap.Duration("timeout", c.srv.opts.RequestReadTimeout),
			zap.Duration("elapsed", time.Since(start).Round(time.Millisecond)))
		return
	}
	c.readFailed(what, err)
}

// finish runs when the reader ends: it closes the connection (after the pending
// responses when draining), gives its budgets back, forgets it, and tells the node.
// Reporting from the reader guarantees ConnClosed follows the connection's last Request.
func (c *conn) finish() {
	if c.draining.Load() {
		c.mu.Lock()
		c.readerDone = true
		c.mu.Unlock()
		signal(c.wake)
		<-c.done
	} else {
		c.close()
	}
	c.mu.Lock()
	c.released = true
	c.srv.reqBudget.release(int64(c.inBytes))
	c.srv.respBudget.release(int64(c.nodeOut))
	c.mu.Unlock()
	c.srv.remove(c)
	c.srv.sink.ConnClosed(c.id)
	c.srv.readers.Done()
}

// readFailed logs why reading stopped, quietly for the ordinary cases.
func (c *conn) readFailed(what string, err error) {
	switch {
	case c.draining.Load() && errors.Is(err, os.ErrDeadlineExceeded):
	case errors.Is(err, net.ErrClosed):
	case what == "size" && errors.Is(err, io.EOF):
		c.lg.Debug("client closed the connection")
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.lg.Warn("closing connection: truncated request frame", zap.String("in", what))
	default:
		c.lg.Info("closing connection: read failed", zap.String("in", what), zap.Error(err))
	}
}

// waitRoom blocks while the connection has too much in flight
// (sluice.connection.max.inflight.requests and .bytes; one request once the connection
// was throttled, mute.go); false when it closed.
func (c *conn) waitRoom() bool {
	counted := false
	for {
		c.mu.Lock()
		ok := !c.q.full() && (c.q.len() == 0 || c.inBytes < c.srv.opts.MaxInFlightBytes &&
			!c.throttled.Load())
		c.mu.Unlock()
		if ok {
			return true
		}
		if !counted {
			counted = true
			c.srv.counters.inFlightWaits.Add(1)
		}
		select {
		case <-c.room:
		case <-c.done:
			return false
		}
	}
}

// responseReserve is how many response bytes a request is counted for while it is in
// flight: a Fetch may be answered with up to its asked size, clamped to the
// connection's cap (the count is corrected to the real size when the answer comes).
// Other responses are small and not counted.
func responseReserve(req kmsg.Request, connCap int) int {
	f, ok := req.(*kmsg.FetchRequest)
	if !ok {
		return 0
	}
	asked := int64(f.MaxBytes)
	if f.Version < 3 {
		asked = 0
		for _, t := range f.Topics {
			for _, p := range t.Partitions {
				asked += int64(max(p.PartitionMaxBytes, 0))
			}
		}
	}
	return int(min(max(asked, 1<<10), int64(connCap)))
}

// reserveResponse waits until the connection's queued response bytes leave room for
// out more (sluice.connection.max.queued.response.bytes; always when none are queued)
// and counts them for the connection, then waits while the node's unwritten responses
// are over sluice.queued.max.response.bytes. Node-wide, a Fetch counts only once it is
// answered: a long poll parked for seconds must not hold other consumers back.
// Bytes are given back as responses are written, or at the write timeout.
func (c *conn) reserveResponse(out int) bool {
	counted := false
	for {
		c.mu.Lock()
		ok := c.outBytes == 0 || c.outBytes+out <= c.srv.opts.MaxQueuedResponseBytes
		c.mu.Unlock()
		if ok {
			break
		}
		if !counted {
			counted = true
			c.srv.counters.responseBudgetWaits.Add(1)
		}
		select {
		case <-c.room:
		case <-c.done:
			return false
		}
	}
	if c.srv.respBudget.tryTake(0) {
		return true
	}
	if !counted {
		c.srv.counters.responseBudgetWaits.Add(1)
	}
	return c.srv.respBudget.take(0, time.Time{}, c.done, c.drained)
}

// freeLocked gives back the request bytes of answered slots and the response bytes of
// written ones; c.mu is held. After the connection ended, finish gave everything back.
func (c *conn) freeLocked(req, out int) {
	c.inBytes -= req
	c.outBytes -= out
	c.nodeOut -= out
	if !c.released {
		c.srv.reqBudget.release(int64(req))
		c.srv.respBudget.release(int64(out))
	}
}

// freeWritten gives back the response bytes of slots just written and lets the reader
// read again if it waited for them.
func (c *conn) freeWritten(out int) {
	c.activity.Add(1)
	if out == 0 {
		return
	}
	c.mu.Lock()
	c.freeLocked(0, out)
	c.mu.Unlock()
	signal(c.room)
}
