package net

import (
	"sync"
	"sync/atomic"
	"time"
)

// Stats counts how often each connection and request limit was hit since the server
// started: metric-ready counters (Server.Stats takes a snapshot).
type Stats struct {
	ConnsRejected         uint64 // new connections closed at once: max.connections
	ConnsRejectedPerIP    uint64 // new connections closed at once: max.connections.per.ip
	IdleClosed            uint64 // connections closed by connections.max.idle.ms
	ReadTimeouts          uint64 // frames not read within sluice.request.read.timeout.ms
	RequestBudgetWaits    uint64 // frames that waited for queued.max.request.bytes
	RequestBudgetTimeouts uint64 // connections closed while waiting for it
	InFlightWaits         uint64 // reads paused by the per-connection in-flight limits
	ResponseBudgetWaits   uint64 // reads paused by queued response bytes (conn or node)
	WriteTimeouts         uint64 // connections closed by sluice.connection.write.timeout.ms
	ConnsOpened           uint64 // connections accepted (not those closed at once by a cap)
	ConnsClosed           uint64 // accepted connections that have ended
	// TLSHandshakeFailures counts connections of TLS listeners closed because their
	// handshake failed or did not end within sluice.request.read.timeout.ms (those are
	// counted in ReadTimeouts too).
	TLSHandshakeFailures uint64
	// SASLFailures counts failed SASL authentications (wrong credentials, a mechanism
	// not enabled); SASLTimeouts those not finished within
	// sluice.sasl.authentication.timeout.ms; SASLExpired the connections closed for a
	// session that expired (connections.max.reauth.ms); SASLOversized the frames over
	// sasl.server.max.receive.size before authentication.
	SASLFailures, SASLTimeouts, SASLExpired, SASLOversized uint64
}

type counters struct {
	connsRejected, connsRejectedPerIP, idleClosed, readTimeouts atomic.Uint64
	requestBudgetWaits, requestBudgetTimeouts, inFlightWaits    atomic.Uint64
	responseBudgetWaits, writeTimeouts                          atomic.Uint64
	connsOpened, connsClosed, tlsHandshakeFailures              atomic.Uint64
	saslFailures, saslTimeouts, saslExpired, saslOversized      atomic.Uint64
}

// Stats returns how often each limit was hit so far.
func (s *Server) Stats() Stats {
	c := &s.counters
	return Stats{
		ConnsRejected: c.connsRejected.Load(), ConnsRejectedPerIP: c.connsRejectedPerIP.Load(),
		IdleClosed: c.idleClosed.Load(), ReadTimeouts: c.readTimeouts.Load(),
		RequestBudgetWaits:    c.requestBudgetWaits.Load(),
		RequestBudgetTimeouts: c.requestBudgetTimeouts.Load(),
		InFlightWaits:         c.inFlightWaits.Load(),
		ResponseBudgetWaits:   c.responseBudgetWaits.Load(),
		WriteTimeouts:         c.writeTimeouts.Load(),
		ConnsOpened:           c.connsOpened.Load(),
		ConnsClosed:           c.connsClosed.Load(),
		TLSHandshakeFailures:  c.tlsHandshakeFailures.Load(),
		SASLFailures:          c.saslFailures.Load(),
		SASLTimeouts:          c.saslTimeouts.Load(),
		SASLExpired:           c.saslExpired.Load(),
		SASLOversized:         c.saslOversized.Load(),
	}
}

// budget is a node-wide byte budget that readers reserve from and wait on. A
// reservation is always granted when nothing is reserved, so one request larger than
// the whole budget still goes through (alone). A negative limit never waits. Taking and
// releasing are atomic adds on the fast path: every request of every connection passes
// here, and only a waiting reader takes the mutex.
type budget struct {
	limit   int64
	used    atomic.Int64
	waiters atomic.Int32 // readers between registering and leaving take's slow path

	mu    sync.Mutex
	freed chan struct{} // closed, and replaced, at a release while readers wait
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit, freed: make(chan struct{})}
}

// tryTake reserves n bytes when they fit.
func (b *budget) tryTake(n int64) bool {
	for {
		u := b.used.Load()
		if b.limit >= 0 && u != 0 && u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// take reserves n bytes, waiting until they fit, until deadline (zero: no deadline) or
// until stop or stop2 is closed. False when it gave up.
func (b *budget) take(n int64, deadline time.Time, stop, stop2 <-chan struct{}) bool {
	if b.tryTake(n) {
		return true
	}
	b.waiters.Add(1)
	defer b.waiters.Add(-1)
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	for {
		// Registered as a waiter before this check: a release that the check misses
		// sees the waiter and closes the channel taken here.
		b.mu.Lock()
		freed := b.freed
		b.mu.Unlock()
		if b.tryTake(n) {
			return true
		}
		select {
		case <-freed:
		case <-timeout:
			return false
		case <-stop:
			return false
		case <-stop2:
			return false
		}
	}
}

// release gives back n bytes (a negative n takes more: a count corrected upwards).
func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.used.Add(-n)
	if b.waiters.Load() > 0 {
		b.mu.Lock()
		close(b.freed)
		b.freed = make(chan struct{})
		b.mu.Unlock()
	}
}

// inUse is the reserved byte count, for tests.
func (b *budget) inUse() int64 { return b.used.Load() }

// sampler lets one log line through per interval for a limit hit over and over (a
// connection flood), and counts the lines it held back.
type sampler struct {
	next    atomic.Int64 // unix nanos before which lines are held back
	skipped atomic.Uint64
}

const sampleEvery = time.Second

// allow says whether to log now, and how many lines were held back since the last one.
func (s *sampler) allow() (bool, uint64) {
	now := time.Now().UnixNano()
	next := s.next.Load()
	if now < next || !s.next.CompareAndSwap(next, now+int64(sampleEvery)) {
		s.skipped.Add(1)
		return false, 0
	}
	return true, s.skipped.Swap(0)
}
