package linearizability

import (
	"fmt"
	"sort"

	"github.com/sluicemq/sluice/core"
)

// OpKind says what an operation did.
type OpKind uint8

// Operation kinds.
const (
	OpAppend         OpKind = iota + 1 // one produced batch (one attempt, or one idempotent write)
	OpRead                             // one fetch of one partition, or a ListOffsets(latest)
	OpCommit                           // OffsetCommit of Offset for (Group, TP)
	OpFetchCommitted                   // OffsetFetch of (Group, TP) that returned Offset (-1: none)
)

// Outcome is what the client learned.
type Outcome uint8

// Outcomes. Unknown covers timeouts, connection resets, acks=0 and errors after which
// the write may or may not have been applied; such operations may take effect at any
// time after their invocation, or never.
const (
	Unknown Outcome = iota
	OK
	Failed // definitely not applied (rejected before anything was written)
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	default:
		return "unknown"
	}
}

// Record is one record a read returned.
type Record struct {
	Offset int64
	Key    string
	Value  string
	// Timestamp is the record's timestamp as a client computes it (-1: not known);
	// BatchBytes is the stored size of the batch this record begins (0 for the other
	// records of a batch, and when not known). Used by timelookups.go and retention.go.
	Timestamp  int64
	BatchBytes int32
}

// Op is one client operation.
type Op struct {
	ID      int
	Client  int
	Kind    OpKind
	TP      core.TopicPartition
	Call    int64 // invocation time (virtual ns)
	Return  int64 // response time; meaningless when Outcome is Unknown
	Outcome Outcome

	// Append. Write names the logical write: every attempt of one batch shares it, and
	// its values are unique to it. An idempotent producer's retries are deduplicated by
	// the broker, so the recorder keeps one op across all its attempts.
	Write      string
	Values     []string
	Keys       []string
	Producer   int   // producing client
	Session    int   // the producer's idempotence session (producer id); order holds within one
	Seq        int   // the producer's write number within the partition (ordering)
	Acks       int16 // 0, 1 or -1
	Idempotent bool
	Offset     int64 // base offset returned when OK; -1 when not known
	// Attempts is how many requests carried the write (0: not counted). An idempotent
	// write sent once was handled between Call and Return; one sent again may still
	// have an attempt in the network after Return (incarnations.go).
	Attempts int
	ErrCode  int16
	// Built is when the batch was made (virtual ns; its records' CreateTime), 0 when
	// not known. Retention by time cannot remove it before Built + retention.ms.
	Built int64
	// SeqErr is the sequence error (OUT_OF_ORDER_SEQUENCE_NUMBER or
	// DUPLICATE_SEQUENCE_NUMBER) an idempotent write was refused with while it was its
	// session's oldest unacknowledged write on the partition (a refusal caused by an
	// earlier write still being retried is not recorded); SeqErrAt is when that answer
	// arrived and SeqErrSent how many attempts had been sent by then (sequences.go).
	SeqErr     int16
	SeqErrAt   int64
	SeqErrSent int
	// SeqErrEpoch is the leader epoch of the replica that refused it, noted as the
	// request arrived (a replicated cluster; -1: not known, 0 on one node).
	SeqErrEpoch int32

	// Read. FetchOffset is -1 for a ListOffsets(latest), which only observes HWM.
	FetchOffset int64
	Records     []Record
	HWM         int64
	LogStart    int64
	Final       bool // part of the final read after the faults healed

	// ServedEpoch is, for a read and an acknowledged append, the leader epoch of the
	// partition's replica on the node that answered (a replicated cluster; -1: not
	// known). Within one leader epoch a leader's high-water mark never goes back;
	// across a leader change a new leader's lags until its followers fetched, which
	// Kafka's Fetch shows (checkStale). A single node leads in epoch 0.
	ServedEpoch int32

	// Committed offsets (OpCommit, OpFetchCommitted): the group whose register
	// (Group, TP) was written or read; the value is in Offset.
	Group string
	// Coord names the coordinator term that answered a commit or fetch in a cluster
	// (0: one node, or not known): leader epoch of the group's offsets partition + 1
	// in the high 32 bits, then node + 1 in the next 8 (CoordString). The register
	// check does not use it; it tells reads across coordinator moves apart.
	Coord uint64
}

// CoordString renders a coordinator term ("" for none): "epoch 3 on node 2".
func CoordString(term uint64) string {
	if term == 0 {
		return ""
	}
	return fmt.Sprintf("epoch %d on node %d", int64(term>>32)-1, int64(term>>24&0xff)-1)
}

// Crash is a power loss on a node, or a failed fsync (after which the log drops what it
// could not make durable): writes acknowledged before it without fsync (acks=1) may be
// gone after it.
type Crash struct {
	Node int32
	At   int64
}

// Final says that the final read of a partition covered [Start, End) completely, End
// being the high-water mark it read to.
type Final struct {
	TP         core.TopicPartition
	Start, End int64
}

// History is everything the clients observed in one run.
type History struct {
	Ops     []Op
	Crashes []Crash
	Finals  []Final
	Groups  []GroupEvent // what consumer-group members were answered (groups.go)
	// Deletions of topics, in the order the broker applied them (incarnations.go).
	Deletions []Deletion
	// Retention is every retention setting a topic may have had, each from its At on
	// (retention.go); ClockSkewNs bounds how far a node's clock is off.
	Retention   []RetentionSetting
	ClockSkewNs int64
	Trims       []Trim // DeleteRecords calls sent (retention.go)
	// TimeLookups are the ListOffsets-by-timestamp answers (timelookups.go);
	// FlushNever says some topic may run with log.flush.policy=never.
	TimeLookups []TimeLookup
	FlushNever  bool
	// Acks1Durable holds acknowledged acks=1 writes to acks=all's promise: never lost,
	// crashes or leader changes or not (the simulator's check that acks=1 is unsafe).
	Acks1Durable bool
}

// Add appends op, giving it the next ID, and returns that ID.
func (h *History) Add(op Op) int {
	op.ID = len(h.Ops)
	h.Ops = append(h.Ops, op)
	return op.ID
}

// Op returns the op with the given ID for updating.
func (h *History) Op(id int) *Op { return &h.Ops[id] }

// partitions returns the partitions the history touches, sorted.
func (h *History) partitions() []core.TopicPartition {
	seen := map[core.TopicPartition]bool{}
	var tps []core.TopicPartition
	for i := range h.Ops {
		if k := h.Ops[i].Kind; k != OpAppend && k != OpRead {
			continue
		}
		if tp := h.Ops[i].TP; !seen[tp] {
			seen[tp] = true
			tps = append(tps, tp)
		}
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
	return tps
}

// crashAfter reports whether a crash happened at or after t.
func (h *History) crashAfter(t int64) bool {
	for _, c := range h.Crashes {
		if c.At >= t {
			return true
		}
	}
	return false
}

func (h *History) final(tp core.TopicPartition) (Final, bool) {
	for _, f := range h.Finals {
		if f.TP == tp {
			return f, true
		}
	}
	return Final{}, false
}
