package broker

// The broker's timers as typed records.
//
// Every timer the broker sets is one brokerTimer, kept by id until it fires or is
// cancelled; timerFired dispatches on its kind with an exhaustive switch. Keeping the
// data a timer needs in the record, rather than in a stored closure, lets a test or
// the simulator's failure report see what the broker is waiting for (Pending, pending.go).

import (
	"fmt"

	"github.com/sluicemq/sluice/core"
)

// timerKind says what a timer is for. The set is closed.
type timerKind uint8

const (
	timerProduceTimeout timerKind = iota + 1 // an acks=all produce's wait runs out
	timerFetchWait                           // a parked fetch's MaxWaitMillis runs out
	timerOpenChunk                           // open the next chunk of queued logs
	timerGroup                               // a group's next deadline (sessions, delays)
	timerOffsetExpiry                        // offsets.retention.check.interval.ms
	timerRetention                           // log.retention.check.interval.ms
)

func (k timerKind) String() string {
	switch k {
	case timerProduceTimeout:
		return "produce-timeout"
	case timerFetchWait:
		return "fetch-wait"
	case timerOpenChunk:
		return "open-chunk"
	case timerGroup:
		return "group-deadline"
	case timerOffsetExpiry:
		return "offset-expiry"
	case timerRetention:
		return "retention"
	default:
		return fmt.Sprintf("timer(%d)", uint8(k))
	}
}

// brokerTimer is one live timer: its kind and the one thing it concerns (a produce, a
// fetch or a group), when it was set and when it is due.
type brokerTimer struct {
	kind    timerKind
	set, at core.Time
	produce *pendingProduce // timerProduceTimeout
	fetch   *fetchWait      // timerFetchWait
	group   string          // timerGroup
}

// setTimer arms t for time at (or later); timerFired runs it on the broker's thread.
func (n *node) setTimer(at core.Time, t brokerTimer) uint64 {
	id := n.token()
	t.set, t.at = n.now, at
	n.timers[id] = t
	n.env.SetTimer(at, id)
	return id
}

func (b *Broker) timerFired(id uint64) {
	t, ok := b.timers[id]
	if !ok {
		return // cancelled (E4)
	}
	delete(b.timers, id)
	switch t.kind {
	case timerProduceTimeout:
		b.produceTimedOut(t.produce)
	case timerFetchWait:
		b.fetchWaitEnded(t.fetch)
	case timerOpenChunk:
		b.opens.armed = false
		b.openSome()
	case timerGroup:
		b.groupTimerFired(t.group)
	case timerOffsetExpiry:
		b.offsetExpiryPass()
	case timerRetention:
		b.retentionPass()
	default:
		core.Invariant(false, "B11", "timer %d of unknown kind %d", id, t.kind)
	}
}

// cancelTimer forgets a timer and asks the driver to drop it (E4).
func (n *node) cancelTimer(id uint64) {
	if _, ok := n.timers[id]; !ok {
		return
	}
	delete(n.timers, id)
	n.env.CancelTimer(id)
}
