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
	timerFetcherBackoff                      // a follower link's replica.fetch.backoff.ms
	timerISRCheck                            // replica.lag.time.max.ms/2: shrink ISRs
	timerAlterISR                            // an ISR change's retry or expiry
	timerCleaner                             // log.cleaner.backoff.ms
	timerQuotaHold                           // a throttled connection's hold ends
	timerDeleteRecords                       // a DeleteRecords' wait for the ISR runs out
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
	case timerFetcherBackoff:
		return "fetcher-backoff"
	case timerISRCheck:
		return "isr-check"
	case timerAlterISR:
		return "isr-change"
	case timerCleaner:
		return "cleaner"
	case timerQuotaHold:
		return "quota-hold"
	case timerDeleteRecords:
		return "delete-records-timeout"
	default:
		return fmt.Sprintf("timer(%d)", uint8(k))
	}
}

// brokerTimer is one live timer: its kind and the one thing it concerns (a produce, a
// fetch or a group), when it was set and when it is due.
type brokerTimer struct {
	kind     timerKind
	set, at  core.Time
	produce  *pendingProduce     // timerProduceTimeout
	fetch    *fetchWait          // timerFetchWait
	group    string              // timerGroup
	leader   int32               // timerFetcherBackoff: the link's leader node
	tp       core.TopicPartition // timerAlterISR
	conn     uint64              // timerQuotaHold
	deletion *pendingDelete      // timerDeleteRecords
}

// timerTable is one part's live timers by id. Ids come from the node's one token
// sequence, so they are unique across the parts.
type timerTable map[uint64]brokerTimer

// armTimer arms t for time at (or later) in tbl; the front's timerFired hands it to
// the part that owns tbl.
func (n *node) armTimer(tbl timerTable, at core.Time, t brokerTimer) uint64 {
	id := n.token()
	t.set, t.at = n.now, at
	tbl[id] = t
	n.env.SetTimer(at, id)
	return id
}

// dropTimer forgets a timer of tbl and asks the driver to drop it (E4).
func (n *node) dropTimer(tbl timerTable, id uint64) {
	if _, ok := tbl[id]; !ok {
		return
	}
	delete(tbl, id)
	n.env.CancelTimer(id)
}

// setTimer arms one of the replica manager's timers.
func (rm *replicaManager) setTimer(at core.Time, t brokerTimer) uint64 {
	return rm.armTimer(rm.timers, at, t)
}

// cancelTimer drops one of the replica manager's timers.
func (rm *replicaManager) cancelTimer(id uint64) { rm.dropTimer(rm.timers, id) }

// setTimer arms one of the group coordinator's timers.
func (gc *groupCoordinator) setTimer(at core.Time, t brokerTimer) uint64 {
	return gc.armTimer(gc.timers, at, t)
}

// cancelTimer drops one of the group coordinator's timers.
func (gc *groupCoordinator) cancelTimer(id uint64) { gc.dropTimer(gc.timers, id) }

// timerFired routes a due timer to the part that set it.
func (b *Broker) timerFired(id uint64) {
	rm, gc := b.replicaManager, b.groupCoordinator
	t, ok := rm.timers[id]
	if ok {
		delete(rm.timers, id)
	} else if t, ok = gc.timers[id]; ok {
		delete(gc.timers, id)
	} else {
		return // cancelled (E4)
	}
	switch t.kind {
	case timerProduceTimeout:
		rm.produceTimedOut(t.produce)
	case timerDeleteRecords:
		rm.deleteTimedOut(t.deletion)
	case timerFetchWait:
		rm.fetchWaitEnded(t.fetch)
	case timerOpenChunk:
		rm.opens.armed = false
		rm.openSome()
	case timerGroup:
		gc.groupTimerFired(t.group)
	case timerOffsetExpiry:
		gc.offsetExpiryPass()
	case timerRetention:
		rm.retentionPass()
	case timerFetcherBackoff:
		rm.fetcherTimerFired(t.leader)
	case timerISRCheck:
		rm.isrCheck()
	case timerAlterISR:
		rm.alterTimerFired(t.tp, id)
	case timerCleaner:
		rm.cleanerPass()
	case timerQuotaHold:
		rm.holdEnded(t.conn)
	default:
		core.Invariant(false, "B11", "timer %d of unknown kind %d", id, t.kind)
	}
}
