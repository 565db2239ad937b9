package net

import (
	"errors"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
)

// Replier is Reply for the goroutine stepping the node (the event loop, or a connection
// reader holding the step lock), which may write answers
// itself. Reply only records the answer; Flush then either writes the finished responses
// of every connection it touched straight to the socket from the calling goroutine, or
// wakes their writers as Server.Reply does.
//
// Writing directly saves a one-at-a-time request the hand-off to the writer goroutine
// (a wake-up, often on the other core, in the round trip). It never blocks the caller:
// the write is a single non-blocking write(2), whatever the socket does not take at once
// is left to the writer, and a connection whose writer is busy, or whose finished
// responses include a Fetch (possibly megabytes to encode), is left to its writer too.
// Responses still leave in request order (E1): only one goroutine writes a connection's
// socket at a time (conn.writing), and each takes the finished slots at the head of the
// FIFO in order.
type Replier struct {
	s       *Server
	touched []*conn
	buf     []byte // encoding buffer, reused between flushes
	batch   []slot // the slots being written, reused between flushes
}

// NewReplier returns a Replier for one goroutine's use.
func (s *Server) NewReplier() *Replier { return &Replier{s: s} }

// Reply records the node's answer in its slot; the response leaves at the next Flush.
func (r *Replier) Reply(rep broker.Reply) {
	r.s.mu.RLock()
	c := r.s.conns[rep.Conn]
	r.s.mu.RUnlock()
	if c == nil || !c.fill(rep) || c.flushMark {
		return
	}
	c.flushMark = true
	r.touched = append(r.touched, c)
}

// Flush sends what Reply recorded: written here when direct is true (the caller has
// nothing else waiting), else by each connection's writer.
func (r *Replier) Flush(direct bool) {
	for i, c := range r.touched {
		c.flushMark = false
		r.touched[i] = nil
		if !direct || !r.writeDirect(c) {
			signal(c.wake)
		}
	}
	r.touched = r.touched[:0]
	if cap(r.buf) > keepBufferBytes {
		r.buf = nil
	}
}

// writeDirect writes the finished responses at the head of c's FIFO with one
// non-blocking write. False means it wrote nothing and the writer must be woken.
func (r *Replier) writeDirect(c *conn) bool {
	c.mu.Lock()
	if c.writing || c.pending != nil || c.rc == nil || !c.q.headDone() || c.q.doneHasKey(int16(kmsg.Fetch)) {
		c.mu.Unlock()
		return false
	}
	batch, freed := c.q.popDone(r.batch[:0])
	c.freeLocked(freed, 0)
	c.writing = true
	c.mu.Unlock()
	signal(c.room)

	out := outBytes(batch)
	buf, closeAfter, err := c.encodeBatch(r.buf[:0], batch)
	clear(batch) // drop the responses
	defer c.freeWritten(out)
	r.buf, r.batch = buf, batch[:0]
	if err != nil {
		c.releaseWrite(nil, false)
		c.close()
		return true
	}
	n, err := c.writeNonBlocking(buf)
	if err != nil {
		c.lg.Debug("closing connection: write failed", zap.Error(err))
		c.releaseWrite(nil, false)
		c.close()
		return true
	}
	var rest []byte
	if n < len(buf) {
		rest = append([]byte(nil), buf[n:]...) // the writer finishes it
	}
	if rest == nil && closeAfter {
		c.releaseWrite(nil, false)
		c.close()
		return true
	}
	if c.releaseWrite(rest, closeAfter) {
		signal(c.wake)
	}
	return true
}

// writeNonBlocking makes one write(2) on the socket, which Go keeps non-blocking: it
// returns how much the kernel took, 0 when the send buffer is full.
func (c *conn) writeNonBlocking(b []byte) (int, error) {
	var n int
	var werr error
	err := c.rc.Write(func(fd uintptr) bool {
		for {
			n, werr = syscall.Write(int(fd), b)
			if !errors.Is(werr, syscall.EINTR) {
				return true // done either way: never wait for the socket here
			}
		}
	})
	if err != nil {
		return 0, err
	}
	if errors.Is(werr, syscall.EAGAIN) {
		return 0, nil
	}
	if werr != nil {
		return 0, werr
	}
	return n, nil
}

// fill records the node's answer in its slot; true when the head of the FIFO became
// writable.
func (c *conn) fill(r broker.Reply) bool {
	c.mu.Lock()
	s := c.q.find(r.ID)
	if s == nil || s.done {
		c.mu.Unlock()
		// B3 says one reply per request; a second one is a broker bug worth seeing.
		c.lg.Warn("reply for a request that is not awaiting one", zap.Uint64("id", r.ID),
			zap.Bool("answered_twice", s != nil))
		return false
	}
	s.done, s.resp, s.close = true, r.Msg, r.Close
	if r.MuteMs > 0 {
		c.mute(r.MuteMs) // rule E8 (mute.go)
	}
	key, version, began := s.key, s.version, s.began
	if s.out > 0 { // a Fetch: count what it really holds rather than what it asked
		real := fetchResponseBytes(r.Msg)
		c.outBytes += real - s.out
		s.out = real
		c.nodeOut += real
		if !c.released {
			c.srv.respBudget.release(-int64(real)) // counted node-wide until written
		}
	}
	wake := c.q.headDone()
	c.mu.Unlock()
	c.srv.observe(key, version, r.Msg, began)
	return wake
}

// releaseWrite ends a direct write, leaving rest (and closing after it when closeAfter)
// to the writer. True when the writer has something to do.
func (c *conn) releaseWrite(rest []byte, closeAfter bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writing = false
	c.pending, c.pendingClose = rest, closeAfter && rest != nil
	return rest != nil || c.q.headDone() || c.readerDone
}
