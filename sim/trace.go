package sim

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
)

// tracer folds every dispatched event, and every client observation, into one hash. Two
// runs of one seed on one commit must produce the same hash; any divergence (a map
// iterated in random order, a goroutine, the wall clock) shows up as a different hash.
// Only integers and strings the run itself produced are hashed, never pointers.
type tracer struct {
	h      hash.Hash64
	buf    [8]byte
	events uint64
	// log, when set, receives one line per event (verbose runs that write a failure's
	// event log).
	log io.Writer
}

func newTracer() *tracer { return &tracer{h: fnv.New64a()} }

func (t *tracer) u64(v uint64) {
	binary.LittleEndian.PutUint64(t.buf[:], v)
	_, _ = t.h.Write(t.buf[:])
}

func (t *tracer) str(s string) {
	t.u64(uint64(len(s)))
	_, _ = io.WriteString(t.h, s)
}

// event records one dispatched event.
func (t *tracer) event(e *event) {
	t.events++
	t.u64(uint64(e.at))
	t.u64(uint64(e.kind)<<32 | uint64(uint32(e.actor)))
	t.u64(e.a)
	t.u64(e.b)
	if t.log != nil {
		fmt.Fprintf(t.log, "%s EVENT %-11s actor=%d a=%d b=%d\n",
			fmtTime(e.at), e.kind, e.actor, e.a, e.b)
	}
}

// note records a client observation (an operation's outcome) so that the hash covers
// what the system answered, not only when.
func (t *tracer) note(tag string, fields ...int64) {
	t.str(tag)
	for _, f := range fields {
		t.u64(uint64(f))
	}
}

// sum returns the hash as 16 hex digits.
func (t *tracer) sum() string { return fmt.Sprintf("%016x", t.h.Sum64()) }

// fmtTime prints virtual nanoseconds as seconds with microsecond precision.
func fmtTime(ns int64) string {
	return fmt.Sprintf("t=%d.%06d", ns/1e9, (ns%1e9)/1e3)
}
