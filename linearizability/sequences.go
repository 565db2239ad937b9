package linearizability

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core"
)

// Idempotent producers' sequence numbers (docs/simulation.md, "What is checked").
const (
	// SequenceRefused: the broker refused a write with a sequence error the producer can
	// disprove: DUPLICATE_SEQUENCE_NUMBER for a write sent only once, or
	// OUT_OF_ORDER_SEQUENCE_NUMBER for the session's first write on the partition or for
	// the write right after one that was acknowledged.
	SequenceRefused = "sequence-refused"
	// SequenceGap: the final read holds two writes of one producer session with a write
	// of that session between them (in sequence) missing.
	SequenceGap = "sequence-gap"
)

type seqKey struct {
	producer, session int
	tp                core.TopicPartition
}

// checkRefusals runs on the history before topic incarnations are split (a deletion
// between a write and the refusal excuses the refusal, and the split would hide it).
//
// A refusal with OUT_OF_ORDER_SEQUENCE_NUMBER is excused when the broker may have
// forgotten the predecessor for a reason the history shows: the topic was deleted
// between the predecessor's call and the refusal, or a log start offset past the
// predecessor's offset was observed, or retention or a DeleteRecords call may have
// removed it by then (a restart rebuilds the producer table from the log start when
// its snapshot is older; Kafka also drops producers whose last batch is gone). A crash is not an excuse: an acknowledged acks=all write is durable, and
// one a crash took back (log.flush.policy=never) is already a lost-write.
func checkRefusals(h *History) []Anomaly {
	ops := map[seqKey]map[int]*Op{}
	first := map[seqKey]int{}
	starts := map[core.TopicPartition]int64{} // highest log start observed
	for i := range h.Ops {
		op := &h.Ops[i]
		switch {
		case op.Kind == OpAppend && op.Idempotent:
			k := seqKey{op.Producer, op.Session, op.TP}
			if ops[k] == nil {
				ops[k] = map[int]*Op{}
				first[k] = op.Seq
			}
			ops[k][op.Seq] = op
			first[k] = min(first[k], op.Seq)
		case op.Kind == OpRead && op.Outcome == OK:
			starts[op.TP] = max(starts[op.TP], op.LogStart)
		}
	}
	for _, f := range h.Finals {
		starts[f.TP] = max(starts[f.TP], f.Start)
	}
	var out []Anomaly
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != OpAppend || !op.Idempotent || op.SeqErr == 0 {
			continue
		}
		k := seqKey{op.Producer, op.Session, op.TP}
		if why := refusalDisproved(h, op, ops[k], first[k], starts[op.TP]); why != "" {
			out = append(out, Anomaly{Kind: SequenceRefused, TP: op.TP, Offset: -1,
				Detail: fmt.Sprintf("write %s (op %d) refused with %s at %s: %s", op.Write,
					op.ID, codeName(op.SeqErr), fmtNs(op.SeqErrAt), why)})
		}
	}
	return out
}

// refusalDisproved says why op's sequence error cannot be right, or "" when it may be.
func refusalDisproved(h *History, op *Op, session map[int]*Op, first int,
	logStart int64) string {
	switch op.SeqErr {
	case kerr.DuplicateSequenceNumber.Code:
		if op.SeqErrSent == 1 {
			return "the write had been sent only once"
		}
		return ""
	case kerr.OutOfOrderSequenceNumber.Code:
	default:
		return ""
	}
	if op.Seq == first {
		if h.deletedWithin(op.TP.Topic, op.Call, op.SeqErrAt) {
			return ""
		}
		if op.SeqErrSent > 1 && h.rotBy(op.TP, op.SeqErrAt) {
			// An earlier attempt may have landed in a batch that rotted; the broker
			// forgot it with the records the rot took and knows later sequences.
			return ""
		}
		if op.SeqErrSent > 1 && pastDupWindow(session, op) {
			// An earlier attempt landed (answered with a timeout, say) and five later
			// writes pushed it out of the window: its retry is out of order, as in
			// Kafka (seed 12670: a first write timed out at offset 0, the session's
			// next eight were sent, and the retry after a restart was refused).
			return ""
		}
		return "it was the session's first write on the partition"
	}
	pred := session[op.Seq-1]
	if pred == nil || pred.Outcome != OK || pred.Return > op.SeqErrAt {
		return ""
	}
	if h.deletedWithin(op.TP.Topic, pred.Call, op.SeqErrAt) {
		return ""
	}
	if op.SeqErrEpoch >= 0 && pred.ServedEpoch > op.SeqErrEpoch {
		// Refused by a leader of an older epoch than the one that acknowledged pred: a
		// deposed leader that had not learnt of its successor, and never had pred
		// (seed 2488). A Kafka leader answers the same; the client starts a new session.
		return ""
	}
	if (pred.Offset < 0 && logStart > 0) || (pred.Offset >= 0 && logStart > pred.Offset) ||
		h.mayHaveRemoved(op.TP, pred, op.SeqErrAt) || pastDupWindow(session, op) {
		return ""
	}
	return fmt.Sprintf("the session's previous write %s (op %d) was acknowledged at %s "+
		"(offset %d)", pred.Write, pred.ID, fmtNs(pred.Return), pred.Offset)
}

// dupWindow is how many of a producer's latest batches a partition remembers to answer a
// retry as a duplicate (Kafka's, and core/replica's, five).
const dupWindow = 5

// pastDupWindow reports whether op may have been appended and then pushed out of the
// duplicate window by later writes of its session sent before the refusal: a retry of
// it is then out of order, as Kafka answers it too.
func pastDupWindow(session map[int]*Op, op *Op) bool {
	later := 0
	for s := op.Seq + 1; later < dupWindow; s++ {
		w := session[s]
		if w == nil || w.Call > op.SeqErrAt {
			return false
		}
		later++
	}
	return true
}

// mayHaveRemoved reports whether retention or a DeleteRecords call may have removed
// write w of tp by time t, observed or not (retention.go has the bounds).
func (h *History) mayHaveRemoved(tp core.TopicPartition, w *Op, t int64) bool {
	if to := h.trimmedTo(tp.Topic, tp.Partition, t); to > max(w.Offset, 0) {
		return true
	}
	ms, bytes := h.retentionBound(tp.Topic, t)
	return bytes || (ms >= 0 && w.Built+ms*1_000_000-2*h.ClockSkewNs <= t)
}

// deletedWithin reports whether topic was deleted at a time in [from, to].
func (h *History) deletedWithin(topic string, from, to int64) bool {
	for _, d := range h.Deletions {
		if d.Topic == topic && d.At >= from && d.At <= to {
			return true
		}
	}
	return false
}

// checkGaps flags, per idempotent producer session, a write missing from the final
// read between two of the session's writes that are in it: the broker appends a
// session's writes only in sequence, so a later one visible means every earlier one
// was appended, and nothing removes a record above the log start.
func (v *view) checkGaps() {
	if !v.hasFin {
		return
	}
	type sess struct{ producer, session int }
	visible := map[sess][]int{}
	bySeq := map[sess]map[int]*write{}
	for _, wid := range v.order {
		w := v.writes[wid]
		a := w.attempts[0]
		if !a.Idempotent {
			continue
		}
		s := sess{a.Producer, a.Session}
		if bySeq[s] == nil {
			bySeq[s] = map[int]*write{}
		}
		bySeq[s][a.Seq] = w
		if v.inFinal(w) {
			visible[s] = append(visible[s], a.Seq)
		}
	}
	sessions := make([]sess, 0, len(visible))
	for s := range visible {
		sessions = append(sessions, s)
	}
	sort.Slice(sessions, func(i, j int) bool {
		if sessions[i].producer != sessions[j].producer {
			return sessions[i].producer < sessions[j].producer
		}
		return sessions[i].session < sessions[j].session
	})
	for _, s := range sessions {
		seqs := visible[s]
		sort.Ints(seqs)
		for i := 1; i < len(seqs); i++ {
			for q := seqs[i-1] + 1; q < seqs[i]; q++ {
				// A number the session never wrote to this partition (another session's,
				// or never made) is no gap: the producer numbers a partition's writes
				// across its sessions.
				if w := bySeq[s][q]; w != nil {
					v.flag(SequenceGap, v.occ[bySeq[s][seqs[i]].values[0]][0], "producer "+
						"%d session %d: writes #%d and #%d are in the final read, #%d (%s) "+
						"is not", s.producer, s.session, seqs[i-1], seqs[i], q, w.id)
					break
				}
			}
		}
	}
}

// inFinal reports whether any value of w is in the final read's range (the final
// reader may also have read below a log start that moved meanwhile).
func (v *view) inFinal(w *write) bool {
	for _, val := range w.values {
		for _, off := range v.occ[val] {
			if off >= v.final.Start && v.finals[off] == val {
				return true
			}
		}
	}
	return false
}

func codeName(code int16) string {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return e.Message
	}
	return fmt.Sprintf("code %d", code)
}

func fmtNs(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }
