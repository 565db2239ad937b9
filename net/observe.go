package net

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestObserver is told once of every request the server answers: the node's request
// metrics. RequestDone runs on whichever goroutine completed the request (a connection
// reader for the answers the server makes itself, else the goroutine stepping the
// node), so it must be cheap and must not block.
type RequestObserver interface {
	// RequestDone reports a request of key at version, its response (nil when none is
	// sent: a Produce with acks=0) and the time from its decoding to its answer. The
	// response is the one about to be written: the observer must not change or keep it.
	RequestDone(key, version int16, resp kmsg.Response, elapsed time.Duration)
}

// clock returns the server's monotonic time, 0 when nothing observes requests (no
// clock read then).
func (s *Server) clock() time.Duration {
	if s.opts.Observer == nil {
		return 0
	}
	return time.Since(s.epoch)
}

// observe reports a finished request to the observer, if any.
func (s *Server) observe(key, version int16, resp kmsg.Response, began time.Duration) {
	if s.opts.Observer != nil {
		s.opts.Observer.RequestDone(key, version, resp, time.Since(s.epoch)-began)
	}
}
