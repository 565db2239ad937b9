package net

import (
	"time"
)

// Muting (rule E8, KIP-219): a reply with MuteMs > 0 stops the connection's reader
// from reading its next request until the mute ends, so a client over its quota waits
// out its throttle even if it ignores ThrottleMillis. Requests already read are served;
// the reply itself is written at once.

// mute extends the connection's mute to ms milliseconds from now, never shortening it,
// and marks the connection throttled: from then on its reader reads one request at a
// time, the next only once the previous one is answered (waitRoom), as Kafka reads
// every connection. Without that, a client pipelining requests would have hundreds
// read ahead before the first answer muted it, and all of them served.
func (c *conn) mute(ms int64) {
	c.throttled.Store(true)
	until := time.Now().Add(time.Duration(ms) * time.Millisecond).UnixNano()
	for {
		cur := c.mutedUntil.Load()
		if cur >= until || c.mutedUntil.CompareAndSwap(cur, until) {
			return
		}
	}
}

// waitMuted blocks the reader while the connection is muted; false when the
// connection closed or drains meanwhile.
func (c *conn) waitMuted() bool {
	for {
		until := c.mutedUntil.Load()
		d := time.Until(time.Unix(0, until))
		if until == 0 || d <= 0 {
			return true
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-c.done:
			t.Stop()
			return false
		case <-c.drained:
			t.Stop()
			return true // draining: the reader stops at its next read anyway
		}
	}
}
