package broker

// Opening the logs of new partitions a few at a time.
//
// Opening a partition's log is real I/O run inside the step (Env.OpenLog): a directory,
// a segment file, reads of the node-state store. One TopicCreated or PartitionsAdded
// record may add up to 10,000 partitions, so opening them all as the record applies
// would stop the node — every other client — for as long as that takes. Instead a
// live record queues its new partitions, and the broker opens at most
// sluice.open.logs.per.step (default openChunk, 64) of them per step: the first chunk
// as the record applies, each next one on a timer set for now, which the driver
// delivers as its own input, in turn with the requests waiting (docs/actors.md). Until
// its log is open a partition answers LEADER_NOT_AVAILABLE (Produce, Fetch,
// ListOffsets, Metadata, ...), as Kafka answers for a partition whose leader is not
// elected yet; every client retries that. The request that created the partitions
// (CreateTopics, CreatePartitions, Metadata auto-creation, the offsets topic) is
// answered only once the queue is empty, so success still means "ready".
//
// At Start the metadata replay opens every log at once: the node serves nobody yet.

import (
	"github.com/sluicemq/sluice/core"
)

// openChunk is the default of sluice.open.logs.per.step (LimitsConfig.OpenLogsPerStep),
// the most partition logs opened in one step. At the measured cost of a new log on the
// real filesystem (docs/storage.md) such a chunk takes tens of milliseconds.
const openChunk = 64

// openState is the queue of partitions whose logs are still to be opened.
type openState struct {
	queue   []core.TopicPartition        // oldest first
	queued  map[core.TopicPartition]bool // in queue and not given up (deleted)
	armed   bool                         // a timer to open the next chunk is set
	waiters []adminOp                    // continued once the queue is empty
	live    bool                         // past the Start replay: queue instead of opening
}

// queueOpen queues tp's log to be opened; during the Start replay it is opened at once.
func (b *Broker) queueOpen(tp core.TopicPartition) {
	if !b.opens.live {
		b.openReplica(tp)
		return
	}
	if b.opens.queued == nil {
		b.opens.queued = map[core.TopicPartition]bool{}
	}
	b.opens.queue = append(b.opens.queue, tp)
	b.opens.queued[tp] = true
}

// opening reports whether tp is queued and not open yet.
func (b *Broker) opening(tp core.TopicPartition) bool { return b.opens.queued[tp] }

// forgetOpen drops tp from the queue (its topic was deleted).
func (b *Broker) forgetOpen(tp core.TopicPartition) { delete(b.opens.queued, tp) }

// openSome opens up to openChunk queued logs, then either arms a timer for the next
// chunk or, with the queue empty, runs the waiters.
func (b *Broker) openSome() {
	n := 0
	for len(b.opens.queue) > 0 && n < max(b.cfg.Limits.OpenLogsPerStep, 1) {
		tp := b.opens.queue[0]
		b.opens.queue = b.opens.queue[1:]
		if !b.opens.queued[tp] {
			continue
		}
		delete(b.opens.queued, tp)
		b.openReplica(tp)
		n++
	}
	if len(b.opens.queue) > 0 {
		if !b.opens.armed {
			b.opens.armed = true
			b.setTimer(b.now, brokerTimer{kind: timerOpenChunk})
		}
		return
	}
	b.opens.queue = nil // release the backing array
	waiting := b.opens.waiters
	b.opens.waiters = nil
	for _, op := range waiting {
		b.adminOpened(op)
	}
}

// afterOpens continues op (adminOpened) once every queued log has been opened (at once
// if none is queued). Creations run one at a time (serialize), so when a creation's
// records have committed, the queue holds its partitions and possibly others, never
// ones queued after it.
func (b *Broker) afterOpens(op adminOp) {
	op.base().phase = adminOpening
	if len(b.opens.queue) == 0 {
		b.adminOpened(op)
		return
	}
	b.opens.waiters = append(b.opens.waiters, op)
}
