package broker

// Holding what a muted connection sent ahead (client quotas, quotas.go).
//
// A reply that throttles a client mutes its connection (rule E8), but a client that
// pipelines may have had more requests read before the mute reached the driver. Kafka
// never reads ahead (one request per connection at a time); Sluice's drivers do, so the
// broker holds, in arrival order, every Produce and Fetch that arrives on a connection
// while its throttle runs, and serves them when it ends: a client cannot be served
// faster than its quota by pipelining. Other requests are served at once (the driver
// keeps the answers in request order, E1). A held request is dropped with its
// connection, and served at once when the node drains.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

// connHold is one throttled connection: until when, and what arrived meanwhile.
type connHold struct {
	until core.Time
	queue []Request
	timer uint64
}

// holdConn extends conn's hold to at least until (the throttle just given).
func (rm *replicaManager) holdConn(conn uint64, until core.Time) {
	if rm.quotas.holds == nil {
		rm.quotas.holds = map[uint64]*connHold{}
	}
	h := rm.quotas.holds[conn]
	if h == nil {
		h = &connHold{}
		rm.quotas.holds[conn] = h
	}
	h.until = max(h.until, until)
}

// heldByQuota says whether r (a Produce or Fetch) must wait for its connection's throttle to
// end, and queues it if so.
func (rm *replicaManager) heldByQuota(r Request) bool {
	h := rm.quotas.holds[r.Conn]
	if h == nil || rm.fetches.draining {
		return false
	}
	if rm.now >= h.until && len(h.queue) == 0 {
		delete(rm.quotas.holds, r.Conn)
		return false
	}
	h.queue = append(h.queue, r)
	rm.armHold(r.Conn, h)
	return true
}

func (rm *replicaManager) armHold(conn uint64, h *connHold) {
	if h.timer == 0 {
		h.timer = rm.setTimer(h.until, brokerTimer{kind: timerQuotaHold, conn: conn})
	}
}

// holdEnded serves a connection's held requests in order, until one throttles it again.
func (rm *replicaManager) holdEnded(conn uint64) {
	h := rm.quotas.holds[conn]
	if h == nil {
		return
	}
	h.timer = 0
	for len(h.queue) > 0 && (rm.now >= h.until || rm.fetches.draining) {
		r := h.queue[0]
		h.queue[0] = Request{}
		h.queue = h.queue[1:]
		rm.serveHeld(r)
	}
	switch {
	case len(h.queue) > 0:
		rm.armHold(conn, h)
	case rm.now >= h.until:
		delete(rm.quotas.holds, conn)
	}
}

// serveHeld runs a held request's handler (which does not hold it again: the check
// is made where requests arrive, Broker.request).
func (rm *replicaManager) serveHeld(r Request) {
	if o, ok := rm.env.(HeldObserver); ok {
		o.ServingHeld(r.ID)
	}
	switch m := r.Msg.(type) {
	case *kmsg.ProduceRequest:
		rm.handleProduce(r, m)
	case *kmsg.FetchRequest:
		rm.handleFetch(r, m)
	default:
		core.Invariant(false, "B11", "held request of type %T", m)
	}
}

// dropHeld forgets a closed connection's held requests: nobody reads their answers.
func (rm *replicaManager) dropHeld(conn uint64) {
	if h := rm.quotas.holds[conn]; h != nil {
		rm.cancelTimer(h.timer)
		delete(rm.quotas.holds, conn)
	}
}

// drainHeld serves every held request now (shutdown), connections in id order.
func (rm *replicaManager) drainHeld() {
	conns := make([]uint64, 0, len(rm.quotas.holds))
	for c := range rm.quotas.holds {
		conns = append(conns, c)
	}
	slices.Sort(conns)
	for _, c := range conns {
		rm.holdEnded(c)
	}
}
