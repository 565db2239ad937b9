package net

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// slot is one in-flight request of a connection, waiting for its response.
type slot struct {
	id      uint64
	corr    int32
	key     int16
	version int16
	bytes   int           // size of the request frame, for the in-flight byte bound
	out     int           // response bytes counted for it (Fetch only), until written
	began   time.Duration // Server.clock when it was decoded (0: not observed)

	done  bool
	resp  kmsg.Response // nil when done: nothing is written (acks=0)
	close bool          // close the connection after this slot
}

// fifo is a connection's in-flight requests in arrival order: a ring that grows by
// doubling up to max, the per-connection in-flight limit (most connections never need
// more than a few slots). Request ids are assigned from a server-wide increasing
// counter, so the ids in a fifo are strictly increasing and a reply finds its slot by
// binary search.
type fifo struct {
	ring []slot
	head int // index of the oldest slot
	n    int
	max  int
}

// initialSlots is the ring size a new connection starts with.
const initialSlots = 8

func newFIFO(max int) fifo {
	return fifo{ring: make([]slot, min(initialSlots, max)), max: max}
}

func (q *fifo) len() int   { return q.n }
func (q *fifo) full() bool { return q.n >= q.max }

func (q *fifo) at(i int) *slot {
	j := q.head + i
	if j >= len(q.ring) {
		j -= len(q.ring)
	}
	return &q.ring[j]
}

// push appends s; the caller checks full first.
func (q *fifo) push(s slot) {
	if q.n == len(q.ring) {
		grown := make([]slot, min(2*len(q.ring), q.max))
		for i := range q.n {
			grown[i] = *q.at(i)
		}
		q.ring, q.head = grown, 0
	}
	*q.at(q.n) = s
	q.n++
}

// find returns the slot of request id, or nil when it is not in flight.
func (q *fifo) find(id uint64) *slot {
	lo, hi := 0, q.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if q.at(mid).id < id {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < q.n && q.at(lo).id == id {
		return q.at(lo)
	}
	return nil
}

// headDone says whether the oldest slot has its response.
func (q *fifo) headDone() bool { return q.n > 0 && q.ring[q.head].done }

// doneHasKey says whether one of the done slots at the head answers a request of key.
func (q *fifo) doneHasKey(key int16) bool {
	for i := 0; i < q.n && q.at(i).done; i++ {
		if q.at(i).key == key {
			return true
		}
	}
	return false
}

// popDone moves the done slots at the head into dst, in order, and returns dst and the
// number of request bytes they held (their response bytes stay counted until written).
// It stops at the first slot still waiting, and after a slot that closes the
// connection.
func (q *fifo) popDone(dst []slot) ([]slot, int) {
	freed := 0
	for q.n > 0 && q.ring[q.head].done {
		s := &q.ring[q.head]
		dst = append(dst, *s)
		freed += s.bytes
		*s = slot{} // drop the response so it can be collected
		q.head++
		if q.head == len(q.ring) {
			q.head = 0
		}
		q.n--
		if dst[len(dst)-1].close {
			break
		}
	}
	return dst, freed
}
