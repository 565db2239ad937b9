package runtime

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/broker"
)

// flowMetrics follows what the steps do, for /metrics: the stages of each Produce
// request, the bytes and records each topic takes in and gives out, and how much each
// fsync covers. Every method runs under stepMu (inside or around a step), as does the
// scrape that reads it, so its state needs no lock of its own. A nil *flowMetrics (no
// HTTP listener) does nothing.
//
// The stages of a Produce request, as the runtime sees them:
//   - queue: from the connection reader handing it to the node until its step begins
//     (waiting in the inbox behind other inputs, or for the step lock);
//   - held: for a request the broker held because its connection's quota throttle was
//     running (core/broker/quota_hold.go), from the end of its first step until the
//     step that serves it (broker.HeldObserver); its append stage is that step;
//   - append: its step, which validates and appends every batch (a write to the page
//     cache, no fsync); a request answered in its step (acks=0, acks=1, errors) ends
//     here;
//   - fsync: for an acks=all request that waited, from the end of its step until the
//     fsync of each partition it appended to completed (the step that delivers the
//     SyncDone of the first fsync requested at or after its append): the sync pool's
//     queue and Log.Sync itself;
//   - replication: from then until it is answered: waiting for the followers to fetch
//     the batch (about nothing on a single node, where the fsync moves the high-water
//     mark).
type flowMetrics struct {
	cur       *produceTiming                           // the Produce of the running step
	parked    map[uint64]*produceTiming                // acks=all produces waiting, by request id
	nextSync  map[core.TopicPartition][]*produceTiming // waiting for an fsync to be requested
	syncs     map[uint64]*syncTiming                   // fsyncs requested, by token
	followers map[uint64]uint64                        // follower fetches waiting: request id -> conn
	topics    map[string]*topicTraffic
	slow      *slowLog // logs slow produces with their stages; nil: off

	queue, held, appendStage, fsync, replication prometheus.Observer
	stages                                       *prometheus.HistogramVec
	batchRecords, batchBytes                     prometheus.Histogram
}

// produceTiming is one Produce request's way through the node.
type produceTiming struct {
	id            uint64
	received      time.Time
	queued        time.Duration // from received to the start of its first step
	held          time.Duration // held for its connection's quota (0: it was not)
	start, end    time.Time     // the step that appended it (that served it, if held)
	tps           []core.TopicPartition
	fsyncsPending int       // partitions whose fsync has not completed
	fsynced       time.Time // when the last of them completed
	done          bool
}

// syncTiming is one requested fsync and the produces it makes durable.
type syncTiming struct {
	tp      core.TopicPartition
	waiters []*produceTiming
}

// topicTraffic counts one topic's client traffic on this node.
type topicTraffic struct {
	bytesIn, recordsIn, bytesOut, recordsOut uint64
}

func newFlowMetrics() *flowMetrics {
	f := &flowMetrics{parked: map[uint64]*produceTiming{},
		nextSync: map[core.TopicPartition][]*produceTiming{},
		syncs:    map[uint64]*syncTiming{}, followers: map[uint64]uint64{},
		topics: map[string]*topicTraffic{},
		stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sluice_produce_stage_seconds",
			Help: "Time a Produce request spent in each stage (queue, held, append, " +
				"fsync, replication); see docs/operations.md.",
			// 10 µs to ~4 s.
			Buckets: prometheus.ExponentialBuckets(10e-6, 2.5, 15),
		}, []string{"stage"}),
		batchRecords: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sluice_fsync_batch_records",
			Help: "Records appended to a partition since its previous fsync, per fsync.",
			// 1 to ~1M records.
			Buckets: prometheus.ExponentialBuckets(1, 4, 11),
		}),
		batchBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sluice_fsync_batch_bytes",
			Help: "Bytes appended to a partition since its previous fsync, per fsync.",
			// 64 B to 256 MiB.
			Buckets: prometheus.ExponentialBuckets(64, 4, 12),
		}),
	}
	f.queue = f.stages.WithLabelValues("queue")
	f.held = f.stages.WithLabelValues("held")
	f.appendStage = f.stages.WithLabelValues("append")
	f.fsync = f.stages.WithLabelValues("fsync")
	f.replication = f.stages.WithLabelValues("replication")
	return f
}

// received is the time a request reaches the node, read only for what is timed.
func (f *flowMetrics) received(r broker.Request) time.Time {
	if f == nil {
		return time.Time{}
	}
	if _, ok := r.Msg.(*kmsg.ProduceRequest); ok {
		return time.Now()
	}
	return time.Time{}
}

// beginStep notes what the step about to run handles.
func (f *flowMetrics) beginStep(in broker.Input, received time.Time) {
	if f == nil {
		return
	}
	switch in := in.(type) {
	case broker.Request:
		switch m := in.Msg.(type) {
		case *kmsg.ProduceRequest:
			now := time.Now()
			if received.IsZero() {
				received = now
			}
			f.cur = &produceTiming{id: in.ID, received: received, start: now,
				queued: now.Sub(received)}
		case *kmsg.FetchRequest:
			if m.ReplicaID >= 0 || m.ReplicaState.ID >= 0 {
				f.followers[in.ID] = in.Conn
			}
		}
	case broker.SyncDone:
		f.syncCompleted(in.Token)
	case broker.ConnClosed:
		// The broker drops the connection's parked fetches without an answer.
		for id, conn := range f.followers {
			if conn == in.Conn {
				delete(f.followers, id)
			}
		}
	}
}

// endStep parks the step's Produce when it was not answered in it.
func (f *flowMetrics) endStep() {
	if f == nil || f.cur == nil {
		return
	}
	t := f.cur
	f.cur = nil
	if t.done {
		return
	}
	t.end = time.Now()
	f.parked[t.id] = t
}

// servingHeld makes the parked Produce id, held for its connection's quota since its
// first step, the step's: what the broker now appends and answers is its.
func (f *flowMetrics) servingHeld(id uint64) {
	if f == nil {
		return
	}
	t := f.parked[id]
	if t == nil {
		return // a held Fetch
	}
	f.endStep() // one served before it in this step and not answered waits on
	delete(f.parked, id)
	now := time.Now()
	t.held, t.start = now.Sub(t.end), now
	f.cur = t
}

// appendLive appends t to ts, first dropping the answered produces when ts is full, so
// that a list no fsync empties (log.flush.policy=never) stays within twice its waiting
// produces.
func appendLive(ts []*produceTiming, t *produceTiming) []*produceTiming {
	if len(ts) == cap(ts) {
		kept := ts[:0]
		for _, x := range ts {
			if !x.done {
				kept = append(kept, x)
			}
		}
		clear(ts[len(kept):])
		ts = kept
	}
	return append(ts, t)
}

// appended counts a batch written to tp's log; only a client's Produce is traffic in.
func (f *flowMetrics) appended(tp core.TopicPartition, h *batch.Header, size int) {
	if f == nil || f.cur == nil {
		return
	}
	tt := f.topic(tp.Topic)
	tt.bytesIn += uint64(size)
	tt.recordsIn += uint64(max(h.RecordCount, 0))
	for _, x := range f.cur.tps {
		if x == tp {
			return
		}
	}
	// The first fsync of tp requested from now on, in this step or a later one, makes
	// the batch durable.
	f.cur.tps = append(f.cur.tps, tp)
	f.cur.fsyncsPending++
	f.nextSync[tp] = appendLive(f.nextSync[tp], f.cur)
}

func (f *flowMetrics) topic(name string) *topicTraffic {
	tt := f.topics[name]
	if tt == nil {
		tt = &topicTraffic{}
		f.topics[name] = tt
	}
	return tt
}

// syncRequested notes an fsync of tp's log: the parked produces that appended to tp
// wait for it, and the histograms get how much it covers.
func (f *flowMetrics) syncRequested(tp core.TopicPartition, token uint64, l *nodeLog) {
	if f == nil {
		return
	}
	if l != nil {
		f.batchRecords.Observe(float64(l.unsyncedRecords))
		f.batchBytes.Observe(float64(l.unsyncedBytes))
		l.unsyncedRecords, l.unsyncedBytes = 0, 0
	}
	s := &syncTiming{tp: tp}
	for _, t := range f.nextSync[tp] {
		if !t.done {
			s.waiters = append(s.waiters, t)
		}
	}
	delete(f.nextSync, tp)
	f.syncs[token] = s
}

// syncCompleted ends the fsync stage of the produces the fsync covered.
func (f *flowMetrics) syncCompleted(token uint64) {
	s := f.syncs[token]
	if s == nil {
		return
	}
	delete(f.syncs, token)
	now := time.Now()
	for _, t := range s.waiters {
		if t.fsyncsPending--; t.fsyncsPending == 0 {
			t.fsynced = now
		}
	}
}

// replied observes a reply the broker makes: the end of a Produce, a Fetch's traffic.
func (f *flowMetrics) replied(r broker.Reply) {
	if f == nil {
		return
	}
	if t := f.cur; t != nil && t.id == r.ID {
		t.done = true
		now := time.Now()
		f.observeUntilAppend(t)
		f.appendStage.Observe(now.Sub(t.start).Seconds())
		f.slowProduce(t, now, false)
		return
	}
	if t := f.parked[r.ID]; t != nil {
		delete(f.parked, r.ID)
		t.done = true
		now := time.Now()
		f.finishParked(t, now)
		f.slowProduce(t, now, true)
		return
	}
	if resp, ok := r.Msg.(*kmsg.FetchResponse); ok {
		if _, follower := f.followers[r.ID]; follower {
			delete(f.followers, r.ID)
			return
		}
		f.fetched(resp)
	}
}

// observeUntilAppend observes the stages before a Produce's append: its queue, and
// its hold if it had one.
func (f *flowMetrics) observeUntilAppend(t *produceTiming) {
	f.queue.Observe(t.queued.Seconds())
	if t.held > 0 {
		f.held.Observe(t.held.Seconds())
	}
}

func (f *flowMetrics) finishParked(t *produceTiming, now time.Time) {
	f.observeUntilAppend(t)
	f.appendStage.Observe(t.end.Sub(t.start).Seconds())
	synced := t.fsynced
	if t.fsyncsPending > 0 || synced.IsZero() {
		synced = now // answered before every fsync completed: a timeout or an error
	}
	f.fsync.Observe(synced.Sub(t.end).Seconds())
	f.replication.Observe(now.Sub(synced).Seconds())
}

// fetched counts the records a consumer's Fetch response carries. A batch is sent
// whole, so all its records count even when the fetch began inside it.
func (f *flowMetrics) fetched(resp *kmsg.FetchResponse) {
	for i := range resp.Topics {
		t := &resp.Topics[i]
		var bytes, records uint64
		for j := range t.Partitions {
			rb := t.Partitions[j].RecordBatches
			bytes += uint64(len(rb))
			records += countRecords(rb)
		}
		if bytes > 0 {
			tt := f.topic(t.Topic)
			tt.bytesOut += bytes
			tt.recordsOut += records
		}
	}
}

// countRecords sums the record counts of the batches in b, stopping at anything that
// is not a whole v2 batch.
func countRecords(b []byte) uint64 {
	var n uint64
	for len(b) >= batch.HeaderSize {
		h, err := batch.ParseHeader(b)
		if err != nil || h.Size() > len(b) {
			break
		}
		n += uint64(max(h.RecordCount, 0))
		b = b[h.Size():]
	}
	return n
}

// forgetTopics drops the traffic of topics the node no longer hosts, so that deleted
// topics do not stay in the metrics forever (their counters start again from zero if
// the topic comes back).
func (f *flowMetrics) forgetTopics(hosted map[string]bool) {
	for name := range f.topics {
		if !hosted[name] {
			delete(f.topics, name)
		}
	}
}
