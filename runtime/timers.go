package runtime

import (
	"container/heap"
	"time"

	"github.com/sluicemq/sluice/core"
)

// timerEntry is one SetTimer effect waiting for its time.
type timerEntry struct {
	at core.Time
	id uint64
}

// timerHeap orders pending timers by time, then id (the order they were set at equal
// times), so timers due together fire in a fixed order.
type timerHeap []timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].id < h[j].id
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// timers is the loop's set of pending broker timers with one time.Timer armed for the
// earliest. Only the goroutine holding the node's step lock (the loop, or a connection
// reader stepping a lone request) touches it.
type timers struct {
	h       timerHeap
	t       *time.Timer
	armed   core.Time // the time t fires for, when isArmed
	isArmed bool
}

func newTimers() *timers {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timers{t: t}
}

// C fires when the earliest timer may be due.
func (ts *timers) C() <-chan time.Time { return ts.t.C }

// add schedules id for at, re-arming the time.Timer when at is the new earliest.
func (ts *timers) add(now, at core.Time, id uint64) {
	heap.Push(&ts.h, timerEntry{at: at, id: id})
	if !ts.isArmed || at < ts.armed {
		ts.arm(now, at)
	}
}

// due pops every timer whose time is at or before now (E4: never before its time), in
// time order, and re-arms for the next one.
func (ts *timers) due(now core.Time, dst []uint64) []uint64 {
	for len(ts.h) > 0 && ts.h[0].at <= now {
		dst = append(dst, heap.Pop(&ts.h).(timerEntry).id)
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
