package sim

import (
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/replica"
)

// syncQueue is one log's fsyncs, run as the runtime's syncer runs them
// (runtime/syncer.go): one Sync of a log at a time (PartitionLog.Sync holds its sync
// mutex across the fsyncs), and the SyncLog effects issued while one is in flight wait
// together for the next, which begins when it completes.
type syncQueue struct {
	busy    bool
	waiting []broker.SyncDone
}

// splitSyncer is a log whose Sync can begin now and finish later (disk.PartitionLog).
type splitSyncer interface {
	StartSync() (finish func() error)
}

// syncLog queues one SyncLog effect; a sync begins after the step, unless one of the
// log's is in flight.
func (n *node) syncLog(e nodeEnv, w broker.SyncDone, log replica.Log) {
	q := n.syncs[log]
	if q == nil {
		q = &syncQueue{}
		n.syncs[log] = q
	}
	q.waiting = append(q.waiting, w)
	if q.busy {
		return
	}
	q.busy = true
	n.w.at(n.w.now, KindSyncStart, n.id, w.Token, w.Incarnation, func() {
		if e.live() {
			n.beginSync(e, q, log)
		}
	})
}

// beginSync begins one Sync for every waiting effect. Its fsyncs are issued now on a
// MemFS flight, so each covers only what was written before it began; the flight lands
// after a drawn latency (longer in a slow-disk spell), then the Sync finishes (records
// what is durable, writes index files) and every waiter gets SyncDone with its error
// (E2). A crash before the landing loses the flight: the fsyncs never completed.
func (n *node) beginSync(e nodeEnv, q *syncQueue, log replica.Log) {
	waiters := q.waiting
	q.waiting = nil
	var finish func() error
	fl := n.fs.Fly(func() {
		if s, ok := log.(splitSyncer); ok {
			finish = s.StartSync()
			return
		}
		err := log.Sync()
		finish = func() error { return err }
	})
	if n.tripped() {
		return
	}
	first := waiters[0]
	n.w.after(n.fsyncDelay(), KindSyncDone, n.id, first.Token, first.Incarnation, func() {
		if !e.live() {
			fl.Drop() // the process is gone: nobody waits for these fsyncs
			return
		}
		fl.Land()
		err := finish()
		if n.tripped() {
			return
		}
		if err != nil {
			// The log drops what this Sync did not make durable, acks=1 writes made
			// while it was in flight included: for the checker that is a crash now,
			// not only when the fault hit the fsync as it began (diskFault).
			n.w.hist.Crashes = append(n.w.hist.Crashes, linearizabilityCrash(n.id, n.w.now))
		}
		for _, w := range waiters {
			w.Err = err
			n.input(w)
		}
		if !e.live() {
			return
		}
		if len(q.waiting) == 0 {
			q.busy = false
			return
		}
		n.beginSync(e, q, log)
	})
}
