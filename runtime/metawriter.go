package runtime

import (
	"sync"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// metaAppender is the metadata log: disk.MetaLog, durable when Append returns.
type metaAppender interface {
	Append(rec meta.Record) error
}

type proposal struct {
	rec   meta.Record
	token uint64
}

// metaWriter appends proposed metadata records on one goroutine, in proposal order, and
// reports each as MetaCommitted once it is durable (E3). The loop queues proposals
// without blocking; the queue is bounded by the broker, which waits for each proposal's
// answer before its requests complete.
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
			err := w.log.Append(p.rec)
			if !w.deliver(broker.MetaCommitted{Token: p.token, Record: p.rec, Err: err}) {
				return
			}
		}
	}
}

// stop ends the writer after the append it is doing.
func (w *metaWriter) stop() {
	close(w.stopped)
	<-w.done
}
