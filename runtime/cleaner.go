package runtime

import (
	"math"
	"sync"
	"time"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/disk"
)

// cleanJob is one CleanLog effect.
type cleanJob struct {
	tp          core.TopicPartition
	incarnation uint64
	req         replica.CleanRequest
	log         replica.Log
}

// optionsCleaner is a log that cleans with the driver's options (disk.PartitionLog).
type optionsCleaner interface {
	CleanWith(req replica.CleanRequest, opt disk.CleanOptions) (replica.CleanResult, error)
}

// cleaner runs CleanLog effects on one goroutine (log.cleaner.threads=1), off the event
// loop, keeping log.cleaner.io.max.bytes.per.second by sleeping between batches.
type cleaner struct {
	deliver func(broker.Input) bool
	jobs    chan cleanJob
	stop    chan struct{}
	wg      sync.WaitGroup
	metrics cleanerMetrics
}

func newCleaner(deliver func(broker.Input) bool) *cleaner {
	// The broker keeps at most one clean in flight; the buffer only absorbs a job
	// submitted while the previous one's completion is being delivered.
	c := &cleaner{deliver: deliver, jobs: make(chan cleanJob, 4), stop: make(chan struct{}),
		metrics: newCleanerMetrics()}
	c.wg.Add(1)
	go c.work()
	return c
}

// submit queues a job without blocking (the loop calls it); a job that does not fit is
// answered at once as aborted, from a goroutine so the step does not wait on the loop.
func (c *cleaner) submit(j cleanJob) {
	select {
	case c.jobs <- j:
	default:
		go c.deliver(broker.CleanDone{TP: j.tp, Incarnation: j.incarnation,
			Err: replica.ErrCleanAborted})
	}
}

func (c *cleaner) work() {
	defer c.wg.Done()
	for {
		select {
		case <-c.stop:
			return
		case j := <-c.jobs:
			c.metrics.busy.Set(1)
			began := time.Now()
			res, err := c.run(j)
			c.metrics.done(res, time.Since(began))
			if !c.deliver(broker.CleanDone{TP: j.tp, Incarnation: j.incarnation,
				Result: res, Err: err}) {
				return
			}
		}
	}
}

func (c *cleaner) run(j cleanJob) (replica.CleanResult, error) {
	opt := disk.CleanOptions{Codec: compress.Codecs{}, Throttle: c.throttle(j.req.IOBytesPerSec)}
	if l, ok := j.log.(optionsCleaner); ok {
		return l.CleanWith(j.req, opt)
	}
	if l, ok := j.log.(replica.Cleaner); ok {
		return l.Clean(j.req)
	}
	return replica.CleanResult{}, replica.ErrCleanAborted
}

// throttle returns the I/O bound of one clean: after every n bytes it sleeps until
// the bytes so far took at least bytes/rate seconds. It stops the clean when the node
// stops.
func (c *cleaner) throttle(rate float64) func(int) error {
	began := time.Now()
	var total float64
	return func(n int) error {
		select {
		case <-c.stop:
			return replica.ErrCleanAborted
		default:
		}
		if rate <= 0 || rate >= math.MaxFloat64 || math.IsInf(rate, 1) {
			return nil
		}
		total += float64(n)
		due := began.Add(time.Duration(total / rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-c.stop:
				return replica.ErrCleanAborted
			}
		}
		return nil
	}
}

// close stops the worker; a clean in progress stops at its next batch.
func (c *cleaner) close() {
	close(c.stop)
	c.wg.Wait()
}
