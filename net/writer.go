package net

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

const (
	// flushBytes is how much encoded output the writer gathers before a write: ready
	// responses go out together in one syscall, big fetches do not pile up in memory.
	flushBytes = 1 << 20
	// keepBufferBytes is the largest write buffer a connection keeps between batches; a
	// bigger one (a large fetch) is dropped so idle connections stay small.
	keepBufferBytes = 2 << 20
	// keepIdleBufferBytes is the largest it keeps once nothing is left to write: ten
	// thousand quiet connections must not hold a batch buffer of megabytes each.
	keepIdleBufferBytes = 64 << 10
	// fetchFrameSlack is room for a Fetch response's frame and header beyond what
	// fetchResponseBytes counts.
	fetchFrameSlack = 256
)

// writeLoop writes the responses at the head of the FIFO whenever they are ready. While
// a Replier writes directly (c.writing set by it), the writer leaves the socket alone;
// the Replier wakes it afterwards if anything is left.
func (c *conn) writeLoop() {
	defer c.srv.goroutines.Done()
	var batch []slot
	var buf []byte // grows to the largest batch written, up to keepBufferBytes
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		owns := false
		for {
			c.mu.Lock()
			if c.writing && !owns {
				c.mu.Unlock()
				break // a direct write is running; it wakes us when it ends
			}
			var freed int
			batch, freed = c.q.popDone(batch[:0])
			c.freeLocked(freed, 0)
			pending, pendingClose := c.pending, c.pendingClose
			c.pending, c.pendingClose = nil, false
			idle := c.readerDone && c.q.len() == 0
			owns = len(batch) > 0 || pending != nil
			c.writing = owns
			c.mu.Unlock()
			if !owns {
				if idle {
					c.close() // drained: every request read was answered
					return
				}
				if cap(buf) > keepIdleBufferBytes {
					putWriteBuf(buf)
					buf = nil
				}
				break
			}
			if pending != nil {
				if c.write(pending) != nil || pendingClose {
					c.close()
					return
				}
			}
			if len(batch) == 0 {
				continue
			}
			signal(c.room)
			var closeAfter bool
			var err error
			out := outBytes(batch)
			buf, closeAfter, err = c.writeBatch(buf[:0], batch)
			clear(batch) // drop the responses
			c.freeWritten(out)
			if err != nil || closeAfter {
				c.close()
				return
			}
			if cap(buf) > keepBufferBytes {
				putWriteBuf(buf)
				buf = nil
			}
		}
	}
}

// encodeBatch encodes the responses of batch into buf, for a direct write. closeAfter is
// true when the batch ends with a slot that asked to close the connection.
func (c *conn) encodeBatch(buf []byte, batch []slot) (_ []byte, closeAfter bool, err error) {
	for i := range batch {
		s := &batch[i]
		if s.resp != nil {
			if buf, err = c.appendResponse(buf, s); err != nil {
				c.lg.Error("closing connection: cannot encode response", zap.Int16("key", s.key),
					zap.Int16("version", s.version), zap.Error(err))
				return buf, true, err
			}
		}
		closeAfter = closeAfter || s.close
	}
	return buf, closeAfter, nil
}

// writeBatch encodes the responses of batch into buf and writes them, in as few writes
// as flushBytes allows. closeAfter is true when the batch ends with a slot that asked to
// close the connection.
func (c *conn) writeBatch(buf []byte, batch []slot) (_ []byte, closeAfter bool, err error) {
	for i := range batch {
		s := &batch[i]
		if s.resp != nil {
			if s.out > keepIdleBufferBytes { // a big Fetch: one buffer, not doublings
				buf = growWriteBuf(buf, s.out+fetchFrameSlack)
			}
			if buf, err = c.appendResponse(buf, s); err != nil {
				c.lg.Error("closing connection: cannot encode response", zap.Int16("key", s.key),
					zap.Int16("version", s.version), zap.Error(err))
				return buf, true, err
			}
			s.resp = nil // encoded: a large Fetch's records can go while the bytes are sent
		}
		if len(buf) >= flushBytes {
			if err = c.write(buf); err != nil {
				return buf, true, err
			}
			buf = buf[:0]
		}
		closeAfter = closeAfter || s.close
	}
	if len(buf) > 0 {
		err = c.write(buf)
	}
	return buf, closeAfter, err
}

// minWriteProgress is how much of its responses a client must take per write timeout
// (or all that is left) for the connection to stay open while a response is written.
const minWriteProgress = 64 << 10

// write writes buf with a blocking write, closing the connection (the caller does) when
// the client takes less than minWriteProgress of it in sluice.connection.write.timeout.ms:
// the deadline is renewed while the client makes progress, so a slow reader is not cut
// off, but one that reads a trickle is.
//
// Over TLS a write that times out leaves the TLS connection unusable (crypto/tls says
// so), so there the bytes go in pieces of minWriteProgress, each with its own
// deadline: the same rule, never continuing after a timed-out write.
func (c *conn) write(buf []byte) error {
	if c.rc != nil { // first without a deadline: most writes fit the socket buffer at once
		n, err := c.writeNonBlocking(buf)
		if err != nil {
			c.lg.Debug("closing connection: write failed", zap.Error(err))
			return err
		}
		if buf = buf[n:]; len(buf) == 0 {
			return nil
		}
	}
	_, isTLS := c.nc.(*tls.Conn)
	for len(buf) > 0 {
		piece := buf
		if isTLS && len(piece) > minWriteProgress {
			piece = piece[:minWriteProgress]
		}
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.srv.opts.WriteTimeout))
		n, err := c.nc.Write(piece)
		buf = buf[n:]
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if n >= minWriteProgress && !isTLS {
				continue
			}
			c.srv.counters.writeTimeouts.Add(1)
			c.lg.Warn("closing connection: the client did not read its responses "+
				"(sluice.connection.write.timeout.ms)", zap.Int("read_in_timeout", n),
				zap.Duration("timeout", c.srv.opts.WriteTimeout), zap.Int("unwritten", len(buf)))
			return err
		}
		c.lg.Debug("closing connection: write failed", zap.Error(err))
		return err
	}
	// A direct write (non-blocking, with no deadline of its own) must not see this one.
	_ = c.nc.SetWriteDeadline(time.Time{})
	return nil
}

// outBytes sums the response bytes counted for the slots of batch.
func outBytes(batch []slot) int {
	n := 0
	for i := range batch {
		n += batch[i].out
	}
	return n
}

// fetchResponseBytes estimates the bytes a Fetch response holds: its record batches
// and a little per partition.
func fetchResponseBytes(resp kmsg.Response) int {
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 1 << 10
	}
	n := 64
	for i := range f.Topics {
		t := &f.Topics[i]
		n += len(t.Topic) + 16
		for j := range t.Partitions {
			n += len(t.Partitions[j].RecordBatches) + 64
		}
	}
	return n
}

// appendResponse appends one response frame: size, correlation id, the header's empty
// tagged-field section when the response is flexible (never for ApiVersions, whose
// response header is v0 at every version so that a client can read it before it knows
// our versions), then the kmsg-encoded body.
func (c *conn) appendResponse(buf []byte, s *slot) (_ []byte, err error) {
	resp := s.resp
	if t, ok := resp.(*rawToken); ok { // a bare SASL token: no header (sasl_authenticate.go)
		return t.AppendTo(buf), nil
	}
	if resp.Key() != s.key {
		return buf, fmt.Errorf("response key %d answers a request of key %d", resp.Key(), s.key)
	}
	start := len(buf)
	defer func() {
		if r := recover(); r != nil {
			buf, err = buf[:start], fmt.Errorf("encoder panicked: %v", r)
		}
	}()
	if resp.GetVersion() != s.version { // the broker sets it; a mismatch would be a bug
		resp.SetVersion(s.version)
	}
	buf = append(buf, 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(s.corr))
	if resp.IsFlexible() && s.key != int16(kmsg.ApiVersions) {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf[start:], uint32(len(buf)-start-4))
	return buf, nil
}
