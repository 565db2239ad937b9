package linearizability

import (
	"sort"
	"strconv"

	"github.com/sluicemq/sluice/core"
)

// Topic incarnations. A deleted topic's data is gone; one re-created under the same
// name starts again at offset 0, so its partitions are new registers that must not be
// checked against the old ones ("two values at one offset"). Check therefore gives
// every incarnation of a deleted topic its own topic-partition key: the first keeps the
// topic's name (so topics never deleted are checked exactly as before), the i-th after
// it is named "<topic>#<i>".
//
// Which incarnation an operation ran against is decided by time. A Deletion's At is
// the instant the broker applied the deletion (the single-threaded world steps it
// atomically): a request the broker handled before it ran against the old incarnation,
// one handled after it against a later one. The broker handles a request somewhere
// between the operation's invocation and its response, so:
//
//   - an operation whose [Call, Return] contains no deletion ran against the incarnation
//     alive then, and is checked there with its real outcome;
//   - a read whose window contains a deletion is dropped (its outcome becomes Unknown,
//     which every check ignores): its records may come from either incarnation;
//   - a write may have applied in every incarnation from the one alive at its invocation
//     up to the one alive at its response, and, when its outcome is unknown or it is an
//     idempotent write sent more than once (one operation across attempts, an earlier
//     attempt possibly still in the network), in any later one: it gets a copy in each,
//     with its real outcome only
//     in the incarnation where it is unambiguous and Unknown elsewhere (Failed stays
//     Failed everywhere: nothing was written anywhere).
//
// Every rule only removes or weakens observations of deleted topics; operations on
// other topics are untouched.

// Deletion is a topic deletion taking effect on the broker at virtual time At.
type Deletion struct {
	Topic string
	At    int64
}

// IncarnationTopic names incarnation i (0 = the first) of topic.
func IncarnationTopic(topic string, i int) string {
	if i == 0 {
		return topic
	}
	return topic + "#" + strconv.Itoa(i)
}

// splitIncarnations returns h with the operations of deleted topics keyed by
// incarnation, or h itself when no topic was deleted.
func (h *History) splitIncarnations() *History {
	if len(h.Deletions) == 0 {
		return h
	}
	at := map[string][]int64{}
	for _, d := range h.Deletions {
		at[d.Topic] = append(at[d.Topic], d.At)
	}
	for _, ts := range at {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	}
	out := *h
	out.Ops = append([]Op(nil), h.Ops...)
	var extra []Op
	for i := range out.Ops {
		op := &out.Ops[i]
		ts, ok := at[op.TP.Topic]
		if !ok || (op.Kind != OpAppend && op.Kind != OpRead) {
			continue
		}
		extra = append(extra, attribute(op, ts)...)
	}
	for _, op := range extra {
		out.Add(op)
	}
	out.TimeLookups = splitLookups(h.TimeLookups, at)
	out.Finals = nil
	for _, f := range h.Finals {
		if ts, ok := at[f.TP.Topic]; ok {
			f.TP = core.TopicPartition{Topic: IncarnationTopic(f.TP.Topic, len(ts)),
				Partition: f.TP.Partition}
		}
		out.Finals = append(out.Finals, f)
	}
	return &out
}

// attribute rewrites op in place to the first incarnation it may have run against and
// returns its copies for the others.
func attribute(op *Op, ts []int64) []Op {
	lo := countBefore(ts, op.Call, false)
	hi := countBefore(ts, op.Return, true)
	if op.Outcome == Unknown && op.Kind == OpAppend || op.Idempotent && op.Attempts != 1 {
		hi = len(ts)
	}
	exact := op.Outcome != Unknown && lo == countBefore(ts, op.Return, true)
	topic := op.TP.Topic
	if op.Kind == OpRead {
		op.TP.Topic = IncarnationTopic(topic, lo)
		if !exact && !op.Final {
			op.Outcome = Unknown
		}
		return nil
	}
	var copies []Op
	for i := lo; i <= hi; i++ {
		c := *op
		c.TP.Topic = IncarnationTopic(topic, i)
		if !(exact && i == lo) && c.Outcome == OK {
			c.Outcome = Unknown
		}
		if i == lo {
			*op = c
		} else {
			copies = append(copies, c)
		}
	}
	return copies
}

// countBefore counts the deletions before t (inclusive: at or before t).
func countBefore(ts []int64, t int64, inclusive bool) int {
	return sort.Search(len(ts), func(i int) bool {
		if inclusive {
			return ts[i] > t
		}
		return ts[i] >= t
	})
}
