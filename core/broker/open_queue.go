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
func (rm *replicaManager) queueOpen(tp core.TopicPartition) {
	if !rm.opens.live {
		rm.openReplica(tp)
		return
	}
	if rm.opens.queued == nil {
		rm.opens.queued = map[core.TopicPartition]bool{}
	}
	rm.opens.queue = append(rm.opens.queue, tp)
	rm.opens.queued[tp] = true
}

// opening reports whether tp is queued and not open yet.
func (rm *replicaManager) opening(tp core.TopicPartition) bool { return rm.opens.queued[tp] }

// logsToOpen counts the logs queued and not open yet.
func (rm *replicaManager) logsToOpen() int { return len(rm.opens.queued) }

// forgetOpen drops tp from the queue (its topic was deleted).
func (rm *replicaManager) forgetOpen(tp core.TopicPartition) { delete(rm.opens.queued, tp) }

// openSome opens up to openChunk queued logs, then either arms a timer for the next
// chunk or, with the queue empty, runs the waiters.
func (rm *replicaManager) openSome() {
	n := 0
	for len(rm.opens.queue) > 0 && n < max(rm.cfg.Limits.OpenLogsPerStep, 1) {
		tp := rm.opens.queue[0]
		rm.opens.queue = rm.opens.queue[1:]
		if !rm.opens.queued[tp] {
			continue
		}
		delete(rm.opens.queued, tp)
		rm.openReplica(tp)
		n++
	}
	if len(rm.opens.queue) > 0 {
		if !rm.opens.armed {
			rm.opens.armed = true
			rm.setTimer(rm.now, brokerTimer{kind: timerOpenChunk})
		}
		return
	}
	rm.opens.queue = nil // release the backing array
	waiting := rm.opens.waiters
	rm.opens.waiters = nil
	for _, op := range waiting {
		rm.post(msgLogsOpened{op})
	}
}

// awaitOpens answers msgLogsOpened{op} once every queued log has been opened (at once
// if none is queued). Creations run one at a time (serialize), so when a creation's
// records have committed, the queue holds its partitions and possibly others, never
// ones queued after it.
func (rm *replicaManager) awaitOpens(op adminOp) {
	if len(rm.opens.queue) == 0 {
		rm.post(msgLogsOpened{op})
		return
	}
	rm.opens.waiters = append(rm.opens.waiters, op)
}
