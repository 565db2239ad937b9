package linearizability

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sluicemq/sluice/core"
)

// Retention and the log start offset (docs/simulation.md, "What is checked").
const (
	// LogStartTooFar: a log start offset past a record that neither retention nor a
	// DeleteRecords call could have removed yet.
	LogStartTooFar = "log-start-too-far"
	// BelowLogStart: a fetch returned a batch wholly below a log start offset already
	// known (reported by the same answer, or by an answer before the fetch was sent with
	// no crash since).
	BelowLogStart = "below-log-start"
)

// RetentionSetting is one value a topic's retention.ms or retention.bytes may have had
// from At on. Topic "" is the broker's default, which applies to every topic. A
// setting sent to the broker is recorded when it is sent (it may apply later).
type RetentionSetting struct {
	Topic string
	At    int64
	Name  string // "retention.ms" or "retention.bytes"
	Value int64  // -1: unbounded
}

// Trim is a DeleteRecords call asking partition TP to start at Offset (-1: at the
// high-water mark), sent at At. Acked: answered without error at Return with
// LowWatermark, a log start the broker promised durable (checkAckedLogStart).
type Trim struct {
	Topic        string
	Partition    int32
	At           int64
	Offset       int64
	Acked        bool
	Return       int64
	LowWatermark int64
	// Rot: not a DeleteRecords call but bit rot the world injected at At in the batch
	// ending at Offset; the broker may start the log there once it detects it (the
	// simulator's sim/rot.go).
	Rot bool
}

// rotted returns the highest offset a rot in tp may have made the log start at, and how
// many rots tp had.
func (h *History) rotted(tp core.TopicPartition) (to int64, n int) {
	for _, tr := range h.Trims {
		if tr.Rot && tr.Topic == baseTopic(tp.Topic) && tr.Partition == tp.Partition {
			to, n = max(to, tr.Offset), n+1
		}
	}
	return to, n
}

// rotBy reports whether rot was injected in tp by time t.
func (h *History) rotBy(tp core.TopicPartition, t int64) bool {
	for _, tr := range h.Trims {
		if tr.Rot && tr.Topic == baseTopic(tp.Topic) && tr.Partition == tp.Partition && tr.At <= t {
			return true
		}
	}
	return false
}

// baseTopic strips the incarnation suffix incarnations.go adds.
func baseTopic(topic string) string {
	if i := strings.LastIndexByte(topic, '#'); i > 0 {
		return topic[:i]
	}
	return topic
}

// retentionBound returns, for topic at time t, the smallest retention.ms in effect at
// any time up to t (-1: none bounded) and whether a bounded retention.bytes was.
func (h *History) retentionBound(topic string, t int64) (ms int64, bytes bool) {
	ms = -1
	for _, s := range h.Retention {
		if s.At > t || (s.Topic != "" && s.Topic != topic) || s.Value < 0 {
			continue
		}
		switch s.Name {
		case "retention.ms":
			if ms < 0 || s.Value < ms {
				ms = s.Value
			}
		case "retention.bytes":
			bytes = true
		}
	}
	return ms, bytes
}

// trimmedTo returns the highest offset a DeleteRecords call sent by t asked tp's topic
// to start at (MaxInt64 for "the high-water mark"), or 0.
func (h *History) trimmedTo(topic string, partition int32, t int64) int64 {
	var to int64
	for _, tr := range h.Trims {
		if tr.Topic != topic || tr.Partition != partition || tr.At > t {
			continue
		}
		if tr.Offset < 0 {
			return 1<<63 - 1
		}
		to = max(to, tr.Offset)
	}
	return to
}

// checkLogStart flags log start offsets nothing allowed. Retention removes whole
// segments whose newest record is older than retention.ms by the broker's clock, or
// oldest segments while the partition is over retention.bytes; DeleteRecords moves the
// start to the offset asked. The bound is conservative: a record built at B (its
// CreateTime; a LogAppendTime is later) cannot be gone before B + R - 2·skew, R the
// smallest retention.ms the topic had meanwhile; with a bounded retention.bytes in
// effect, or a DeleteRecords up to the start, any start up to the high-water mark is
// allowed.
func (v *view) checkLogStart() {
	type rec struct {
		off   int64
		built int64
	}
	var recs []rec
	for off, val := range v.o2v {
		if a := v.writes[v.valW[val]]; a != nil && a.attempts[0].Built > 0 {
			recs = append(recs, rec{off, a.attempts[0].Built})
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].off < recs[j].off })
	youngest := make([]int64, len(recs)) // youngest[i]: newest Built among recs[:i+1]
	for i, r := range recs {
		youngest[i] = r.built
		if i > 0 {
			youngest[i] = max(youngest[i], youngest[i-1])
		}
	}
	topic := baseTopic(v.tp.Topic)
	var bc *bytesCheck // built when first needed
	for _, r := range v.reads {
		if r.LogStart <= 0 {
			continue
		}
		i := sort.Search(len(recs), func(i int) bool { return recs[i].off >= r.LogStart }) - 1
		if i < 0 || v.h.trimmedTo(topic, v.tp.Partition, r.Return) >= r.LogStart {
			continue
		}
		ms, bytes := v.h.retentionBound(topic, r.Return)
		if ms >= 0 && youngest[i]+ms*1_000_000-2*v.h.ClockSkewNs <= r.Return {
			continue
		}
		if bytes {
			// Size retention may have cut here, but only as far as it keeps
			// retention.bytes (retention_bytes.go).
			if bc == nil {
				bc = v.newBytesCheck()
			}
			if why := bc.tooFar(r, ms); why != "" {
				v.flag(LogStartTooFar, r.LogStart, "%s", why)
				return
			}
			continue
		}
		v.flag(LogStartTooFar, r.LogStart, "op %d saw log start %d at %s, past a record "+
			"made at %s (retention.ms %d at most, clock skew up to %s, no DeleteRecords "+
			"that far)", r.ID, r.LogStart, fmtNs(r.Return), fmtNs(youngest[i]), ms,
			fmtNs(v.h.ClockSkewNs))
		return
	}
}

// checkBelowLogStart flags fetches that returned a batch wholly below a log start the
// reader already knew: the one its own answer reported, or one an earlier answer (that
// returned before this fetch was sent, with no crash since, served in the same leader
// epoch) reported. A batch holding the log start may still be served whole. Across a
// leader change the start may go back, in Kafka as in Sluice: each replica runs its own
// retention, and a follower takes its leader's start only up to its own high-water
// mark, so a new leader that lagged may still hold what the old one had deleted
// (seed 104 of a retention-heavy world).
func (v *view) checkBelowLogStart() {
	known := map[int32][]*Op{} // reads that reported a log start, by epoch and return time
	for _, r := range v.reads {
		if r.LogStart > 0 {
			known[r.ServedEpoch] = append(known[r.ServedEpoch], r)
		}
	}
	best := map[int32]*maxTable{}
	for e, ks := range known {
		sort.Slice(ks, func(i, j int) bool { return ks[i].Return < ks[j].Return })
		best[e] = newMaxTable(len(ks), func(i int) int64 { return ks[i].LogStart })
	}
	acked := v.h.ackedTrims(baseTopic(v.tp.Topic), v.tp.Partition)
	for _, r := range v.reads {
		if len(r.Records) == 0 {
			continue
		}
		start, by := r.LogStart, r.ID
		// Answers in r's epoch after the last crash up to r's return and before r was sent.
		ks := known[r.ServedEpoch]
		lo := sort.Search(len(ks), func(i int) bool {
			return ks[i].Return > v.h.lastCrash(r.Return)
		})
		hi := sort.Search(len(ks), func(i int) bool { return ks[i].Return >= r.Call })
		if b := best[r.ServedEpoch]; b != nil {
			if i := b.argmax(lo, hi); i >= 0 && ks[i].LogStart > start {
				start, by = ks[i].LogStart, ks[i].ID
			}
		}
		// Crashes or not: an acknowledged DeleteRecords is durable.
		if low := v.h.ackedLogStart(acked, r.Call, r.Return); low > start {
			start, by = low, -1
		}
		for _, rec := range r.Records {
			wid, ok := v.valW[rec.Value]
			if !ok {
				continue
			}
			last := rec.Offset - int64(v.byVal[rec.Value]) + int64(len(v.writes[wid].values)) - 1
			if last < start {
				from := fmt.Sprintf("op %d", by)
				if by < 0 {
					from = "an acknowledged DeleteRecords"
				}
				v.flag(BelowLogStart, rec.Offset, "op %d returned offset %d (its batch ends at "+
					"%d) below log start %d known from %s", r.ID, rec.Offset, last, start, from)
				return
			}
		}
	}
}

// ackedTrims returns the acknowledged DeleteRecords calls of topic's partition.
func (h *History) ackedTrims(topic string, partition int32) []Trim {
	var out []Trim
	for _, tr := range h.Trims {
		if tr.Acked && tr.Topic == topic && tr.Partition == partition {
			out = append(out, tr)
		}
	}
	return out
}

// ackedLogStart returns the highest low watermark of the acknowledged DeleteRecords
// calls (ackedTrims) that returned before t, with no deletion of the topic from the
// call's sending up to until (0: none). The broker stored that log start durably
// before answering: no crash may bring back records below it.
func (h *History) ackedLogStart(acked []Trim, t, until int64) int64 {
	var best int64
	for _, tr := range acked {
		if tr.Return >= t || tr.LowWatermark <= best ||
			h.deletedBetween(tr.Topic, tr.At, until) {
			continue
		}
		best = tr.LowWatermark
	}
	return best
}

// deletedBetween reports a deletion of topic at a time in [from, to].
func (h *History) deletedBetween(topic string, from, to int64) bool {
	for _, d := range h.Deletions {
		if d.Topic == topic && d.At >= from && d.At <= to {
			return true
		}
	}
	return false
}

// lastCrash returns the time of the last crash at or before t (-1: none).
func (h *History) lastCrash(t int64) int64 {
	last := int64(-1)
	for _, c := range h.Crashes {
		if c.At <= t {
			last = max(last, c.At)
		}
	}
	return last
}

// maxTable answers "which index holds the largest value in [lo, hi)" in O(1) after
// O(n log n) preparation (a sparse table).
type maxTable struct {
	val func(int) int64
	idx [][]int
}

func newMaxTable(n int, val func(int) int64) *maxTable {
	t := &maxTable{val: val}
	level := make([]int, n)
	for i := range level {
		level[i] = i
	}
	t.idx = append(t.idx, level)
	for w := 1; 2*w <= n; w *= 2 {
		prev := t.idx[len(t.idx)-1]
		next := make([]int, n-2*w+1)
		for i := range next {
			next[i] = t.pick(prev[i], prev[i+w])
		}
		t.idx = append(t.idx, next)
	}
	return t
}

func (t *maxTable) pick(a, b int) int {
	if t.val(b) > t.val(a) {
		return b
	}
	return a
}

func (t *maxTable) argmax(lo, hi int) int {
	if lo >= hi {
		return -1
	}
	k := 0
	for 1<<(k+1) <= hi-lo {
		k++
	}
	return t.pick(t.idx[k][lo], t.idx[k][hi-(1<<k)])
}
