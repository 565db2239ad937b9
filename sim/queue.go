package sim

import (
	"container/heap"
	"fmt"
)

// Kind names what an event does. Kinds are part of the trace hash: never renumber them
// without accepting that every recorded trace hash changes.
type Kind uint8

// Event kinds.
const (
	KindNone       Kind = iota
	KindToNode          // a message (request or connection close) reaches a node
	KindToClient        // a reply or connection reset reaches a client
	KindTimer           // a broker timer fires
	KindSyncDone        // a simulated fsync finishes
	KindMetaCommit      // the metadata log commits a record
	KindClientWake      // a client's own timer (tick, backoff, request timeout)
	KindFault           // the fault scheduler starts or ends a fault
	KindResume          // a paused node resumes
	KindRestart         // a crashed node restarts
	KindPhase           // a run phase begins (heal, final check, end)
	KindSyncStart       // a simulated fsync begins
	KindClean           // a simulated log clean (compaction) finishes
	kindCount
)

var kindNames = [...]string{"none", "to-node", "to-client", "timer", "sync-done",
	"meta-commit", "client-wake", "fault", "resume", "restart", "phase", "sync-start",
	"clean"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// event is one scheduled happening. Actor is the node or client it concerns (or -1), A
// and B are kind-specific key fields; all four go into the trace hash, fn does the work.
type event struct {
	at    int64 // virtual nanoseconds since the run's epoch
	seq   uint64
	kind  Kind
	actor int32
	a, b  uint64
	fn    func()
	ckey  uint64 // non-zero: the event can be cancelled by this key (eventQueue.remove)
}

// eventQueue orders events by (time, sequence number). The sequence number is assigned
// at scheduling, so two events at the same instant run in the order they were scheduled
// and nothing about the order depends on maps, goroutines or the wall clock.
type eventQueue struct {
	items   []event
	nextSeq uint64
	limit   int
	// pos is where each cancellable event sits in items, kept by Swap, Push and Pop.
	pos      map[uint64]int
	nextCKey uint64
}

func (q *eventQueue) Len() int { return len(q.items) }
func (q *eventQueue) Less(i, j int) bool {
	if q.items[i].at != q.items[j].at {
		return q.items[i].at < q.items[j].at
	}
	return q.items[i].seq < q.items[j].seq
}
func (q *eventQueue) Swap(i, j int) {
	q.items[i], q.items[j] = q.items[j], q.items[i]
	if k := q.items[i].ckey; k != 0 {
		q.pos[k] = i
	}
	if k := q.items[j].ckey; k != 0 {
		q.pos[k] = j
	}
}

func (q *eventQueue) Push(x any) {
	e := x.(event)
	if e.ckey != 0 {
		q.pos[e.ckey] = len(q.items)
	}
	q.items = append(q.items, e)
}

func (q *eventQueue) Pop() any {
	n := len(q.items) - 1
	e := q.items[n]
	q.items[n] = event{}
	q.items = q.items[:n]
	if e.ckey != 0 {
		delete(q.pos, e.ckey)
	}
	return e
}

// cancelKey returns a fresh key for a cancellable event.
func (q *eventQueue) cancelKey() uint64 {
	if q.pos == nil {
		q.pos = map[uint64]int{}
	}
	q.nextCKey++
	return q.nextCKey
}

// remove drops the cancellable event with key k if it has not run yet. The pop order
// of the others does not change: it is fixed by (time, sequence), not by heap layout.
func (q *eventQueue) remove(k uint64) {
	if i, ok := q.pos[k]; ok {
		heap.Remove(q, i)
	}
}

// errQueueFull reports a run whose event queue outgrew its bound: some actor is
// generating events without limit, which is itself a bug worth a failing seed.
var errQueueFull = fmt.Errorf("event queue exceeded its bound")

// push schedules e and returns false when the queue is full.
func (q *eventQueue) push(e event) bool {
	if q.limit > 0 && len(q.items) >= q.limit {
		return false
	}
	e.seq = q.nextSeq
	q.nextSeq++
	heap.Push(q, e)
	return true
}

// pop removes the earliest event.
func (q *eventQueue) pop() (event, bool) {
	if len(q.items) == 0 {
		return event{}, false
	}
	return heap.Pop(q).(event), true
}

// peekTime returns the time of the earliest event.
func (q *eventQueue) peekTime() (int64, bool) {
	if len(q.items) == 0 {
		return 0, false
	}
	return q.items[0].at, true
}
