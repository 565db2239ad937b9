package runtime

import (
	"container/heap"
	"time"

	"github.com/sluicemq/sluice/core"
)

// timerEntry is one SetTimer effect waiting for its time. idx is its place in the heap,
// kept current by the heap's Swap so a cancelled timer can be removed at once.
type timerEntry struct {
	at  core.Time
	id  uint64
	idx int
}

// timerHeap orders pending timers by time, then id (the order they were set at equal
// times), so timers due together fire in a fixed order.
type timerHeap []*timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *timerHeap) Push(x any) {
	e := x.(*timerEntry)
	e.idx = len(*h)
	*h = append(*h, e)
}
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// timers is the loop's set of pending broker timers with one time.Timer armed for the
// earliest. Only the goroutine holding the node's step lock (the loop, or a connection
// reader stepping a lone request) touches it. Its size is the broker's live timers: a
// cancelled one leaves the heap at once (E4), so a long acks=all timeout answered early
// costs neither memory nor a step.
type timers struct {
	h       timerHeap
	byID    map[uint64]*timerEntry
	t       *time.Timer
	armed   core.Time // the time t fires for, when isArmed
	isArmed bool
}

func newTimers() *timers {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timers{t: t, byID: map[uint64]*timerEntry{}}
}

// C fires when the earliest timer may be due.
func (ts *timers) C() <-chan time.Time { return ts.t.C }

// add schedules id for at, re-arming the time.Timer when at is the new earliest.
func (ts *timers) add(now, at core.Time, id uint64) {
	e := &timerEntry{at: at, id: id}
	heap.Push(&ts.h, e)
	ts.byID[id] = e
	if !ts.isArmed || at < ts.armed {
		ts.arm(now, at)
	}
}

// cancel removes id if it is still pending; an id already fired or unknown is ignored.
// The time.Timer stays armed: firing early for nothing costs one empty due call.
func (ts *timers) cancel(id uint64) {
	e, ok := ts.byID[id]
	if !ok {
		return
	}
	delete(ts.byID, id)
	heap.Remove(&ts.h, e.idx)
}

// pending is the number of timers set and neither fired nor cancelled.
func (ts *timers) pending() int { return len(ts.h) }

// due pops every timer whose time is at or before now (E4: never before its time), in
// time order, and re-arms for the next one.
func (ts *timers) due(now core.Time, dst []uint64) []uint64 {
	for len(ts.h) > 0 && ts.h[0].at <= now {
		e := heap.Pop(&ts.h).(*timerEntry)
		delete(ts.byID, e.id)
		dst = append(dst, e.id)
	}
	ts.isArmed = false
	if len(ts.h) > 0 {
		ts.arm(now, ts.h[0].at)
	}
	return dst
}

func (ts *timers) arm(now, at core.Time) {
	ts.armed, ts.isArmed = at, true
	// Both now and at are on the node's monotonic clock, and time.Timer waits at least
	// the duration on the monotonic clock, so the timer cannot fire early.
	ts.t.Reset(max(time.Duration(at-now), 0))
}

func (ts *timers) stop() { ts.t.Stop() }
