package runtime

import (
	"sync"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// metaAppender is the metadata log: disk.MetaLog, durable when Append returns the
// record's index; after an error the record is in doubt.
type metaAppender interface {
	Append(rec meta.Record) (uint64, error)
}

type proposal struct {
	rec   meta.Record
	token uint64
}

// metaWriter is the single-node adapter of the metadata port (core/broker env.go,
// M1–M7). It appends proposed records on one goroutine, in proposal order (M5), and
// once a record is durable at index N hands the loop MetaApplied{N} and then the answer
// "committed at N" (M2, M4), through one FIFO channel. A failed append is answered
// MetaUnknown: the store's write is in doubt, so the record may be there after a
// restart (disk.MemState models pebble's failed writes so). The node is always its
// own leader and never answers NotLeader or Rejected. The loop queues proposals without
// blocking; the queue is bounded by the broker, which waits for each proposal's answer
// before its requests complete.
type metaWriter struct {
	log     metaAppender
	deliver func(broker.Input) bool

	mu      sync.Mutex
	queue   []proposal
	wake    chan struct{}
	stopped chan struct{}
	done    chan struct{}
}

func newMetaWriter(log metaAppender, deliver func(broker.Input) bool) *metaWriter {
	w := &metaWriter{log: log, deliver: deliver, wake: make(chan struct{}, 1),
		stopped: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *metaWriter) submit(rec meta.Record, token uint64) {
	w.mu.Lock()
	w.queue = append(w.queue, proposal{rec: rec, token: token})
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *metaWriter) run() {
	defer close(w.done)
	for {
		select {
		case <-w.wake:
		case <-w.stopped:
			return
		}
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, p := range batch {
			if !w.append(p) {
				return
			}
		}
	}
}

// append writes one proposal and delivers what follows from it; false when the loop
// no longer takes inputs.
func (w *metaWriter) append(p proposal) bool {
	idx, err := w.log.Append(p.rec)
	if err != nil {
		return w.deliver(broker.MetaAnswer{Token: p.token, Outcome: broker.MetaUnknown, Err: err})
	}
	return w.deliver(broker.MetaApplied{Index: idx, Record: p.rec}) &&
		w.deliver(broker.MetaAnswer{Token: p.token, Outcome: broker.MetaCommitted, Index: idx})
}

// stop ends the writer after the append it is doing.
func (w *metaWriter) stop() {
	close(w.stopped)
	<-w.done
}
