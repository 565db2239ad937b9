package runtime

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/replica"
)

// syncJob is one pending Log.Sync and every SyncLog effect it answers.
type syncJob struct {
	log     replica.Log
	waiters []broker.SyncDone // Err filled in when the sync returns
}

// syncer runs Log.Sync for SyncLog effects on a few goroutines, off the event loop.
//
// Coalescing: a SyncLog for a log that already has a job queued (not yet started) joins
// that job, since a sync that has not started yet covers everything appended before the
// call (E2). A SyncLog for a log whose sync is running gets a new job: the running one
// may have missed the latest append. So at most one job per log waits in the queue, and
// the queue is bounded by the number of open logs.
type syncer struct {
	deliver func(broker.Input) bool // hands a completion to the loop; false once stopping

	mu      sync.Mutex
	cond    *sync.Cond
	queued  map[replica.Log]*syncJob
	order   []*syncJob // FIFO of queued jobs
	kicks   int        // jobs submitted that no worker was woken for yet
	stopped bool
	wg      sync.WaitGroup

	latency prometheus.Histogram // sluice_fsync_duration_seconds, one per Log.Sync
}

func newSyncer(workers int, deliver func(broker.Input) bool) *syncer {
	s := &syncer{deliver: deliver, queued: map[replica.Log]*syncJob{},
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sluice_fsync_duration_seconds",
			Help: "Time one partition log fsync (a group commit) took.",
			// 100 µs to ~3 s: a fast NVMe fsync to a disk in trouble.
			Buckets: prometheus.ExponentialBuckets(100e-6, 2.5, 12),
		})}
	s.cond = sync.NewCond(&s.mu)
	s.wg.Add(workers)
	for range workers {
		go s.work()
	}
	return s
}

// submit queues a sync; it never blocks on I/O, so the loop can call it. The job
// starts at the next kick: the node kicks once the step's replies are sent, so that
// waking a worker (a thread wake-up) does not delay the answers of that step.
func (s *syncer) submit(tp core.TopicPartition, incarnation, token uint64, log replica.Log) {
	w := broker.SyncDone{TP: tp, Incarnation: incarnation, Token: token}
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.queued[log]; j != nil {
		j.waiters = append(j.waiters, w)
		return
	}
	j := &syncJob{log: log, waiters: []broker.SyncDone{w}}
	s.queued[log] = j
	s.order = append(s.order, j)
	s.kicks++
}

// kick wakes a worker for every job submitted since the last kick.
func (s *syncer) kick() {
	s.mu.Lock()
	k := s.kicks
	s.kicks = 0
	s.mu.Unlock()
	for range k {
		s.cond.Signal()
	}
}

func (s *syncer) work() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		for len(s.order) == 0 && !s.stopped {
			s.cond.Wait()
		}
		if s.stopped {
			s.mu.Unlock()
			return
		}
		j := s.order[0]
		s.order[0] = nil
		s.order = s.order[1:]
		delete(s.queued, j.log)
		s.mu.Unlock()

		began := time.Now()
		err := j.log.Sync() // E2: SyncDone only after Sync returned, with its error
		s.latency.Observe(time.Since(began).Seconds())
		for _, w := range j.waiters {
			w.Err = err
			if !s.deliver(w) {
				return
			}
		}
	}
}

// stop ends the workers after the syncs they are running; queued jobs are dropped (the
// loop that would read their completions has already stopped).
func (s *syncer) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cond.Broadcast()
	s.wg.Wait()
}
