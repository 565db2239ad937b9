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
}

type counters struct {
	connsRejected, connsRejectedPerIP, idleClosed, readTimeouts atomic.Uint64
	requestBudgetWaits, requestBudgetTimeouts, inFlightWaits    atomic.Uint64
	responseBudgetWaits, writeTimeouts                          atomic.Uint64
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
	}
}

// budget is a node-wide byte budget that readers reserve from and wait on. A
// reservation is always granted when nothing is reserved, so one request larger than
// the whole budget still goes through (alone). A negative limit never waits.
type budget struct {
	limit int64

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed, and replaced, whenever bytes are released
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit, freed: make(chan struct{})}
}

// tryTake reserves n bytes when they fit; otherwise it returns a channel closed at the
// next release.
func (b *budget) tryTake(n int64) (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.limit < 0 || b.used == 0 || b.used+n <= b.limit {
		b.used += n
		return true, nil
	}
	return false, b.freed
}

// take reserves n bytes, waiting until they fit, until deadline (zero: no deadline) or
// until stop or stop2 is closed. False when it gave up.
func (b *budget) take(n int64, deadline time.Time, stop, stop2 <-chan struct{}) bool {
	var timeout <-chan time.Time
	for {
		ok, freed := b.tryTake(n)
		if ok {
			return true
		}
		if timeout == nil && !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			timeout = t.C
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

func (b *budget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse is the reserved byte count, for tests.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

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
