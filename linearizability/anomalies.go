package linearizability

import (
	"fmt"
	"sort"

	"github.com/sluicemq/sluice/core"
)

// Anomaly kinds.
const (
	LostWrite       = "lost-write"          // acks=all acknowledged, not readable at its offset at the end
	Inconsistent    = "inconsistent-offset" // two values at one offset
	WrongOffset     = "wrong-offset"        // an acknowledged write observed elsewhere
	Duplicate       = "duplicate"           // more copies than attempts, or >1 for idempotent
	OutOfOrder      = "out-of-order"        // one idempotent producer's writes reordered
	ReadPastHWM     = "read-past-hwm"       // a read returned offsets at or past its HWM
	SkippedRead     = "skipped-read"        // a read's records do not start at the fetch offset or have a gap
	PhantomRead     = "phantom-read"        // a value no operation wrote
	RejectedVisible = "rejected-visible"    // a write every attempt of which was refused, visible
	StaleRead       = "stale-read"          // a read's HWM behind an acks=all write acknowledged before it began
)

// Anomaly is one violation found in a history.
type Anomaly struct {
	Kind   string
	TP     core.TopicPartition
	Offset int64
	Detail string
}

func (a Anomaly) String() string {
	if isGroupKind(a.Kind) {
		// Group anomalies: TP.Topic is the group, Offset the generation.
		return fmt.Sprintf("%s group %s generation %d: %s", a.Kind, a.TP.Topic, a.Offset,
			a.Detail)
	}
	return fmt.Sprintf("%s %s@%d: %s", a.Kind, a.TP, a.Offset, a.Detail)
}

// write is one logical write and its attempts.
type write struct {
	id       string
	attempts []*Op
	values   []string
}

// view indexes one partition's operations.
type view struct {
	h      *History
	tp     core.TopicPartition
	writes map[string]*write
	order  []string          // write ids in first-invocation order
	byVal  map[string]int    // value → index in its write
	valW   map[string]string // value → write id
	reads  []*Op
	o2v    map[int64]string   // every observed offset → value
	occ    map[string][]int64 // value → distinct observed offsets, ascending
	final  Final
	hasFin bool
	finals map[int64]string // offsets observed by the final read
	out    []Anomaly
	counts map[string]int
	bad    map[int64]bool // offsets already reported inconsistent
	// lagging are the reads below what another leadership showed before they began
	// (checkStale): the porcupine model leaves them out.
	lagging map[int]bool
}

func newView(h *History, tp core.TopicPartition) *view {
	v := &view{h: h, tp: tp, writes: map[string]*write{}, byVal: map[string]int{},
		valW: map[string]string{}, o2v: map[int64]string{}, occ: map[string][]int64{},
		finals: map[int64]string{}, counts: map[string]int{}, bad: map[int64]bool{}}
	v.final, v.hasFin = h.final(tp)
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.TP != tp {
			continue
		}
		switch op.Kind {
		case OpAppend:
			v.addAppend(op)
		case OpRead:
			if op.Outcome == OK {
				v.reads = append(v.reads, op)
			}
		}
	}
	return v
}

func (v *view) addAppend(op *Op) {
	w := v.writes[op.Write]
	if w == nil {
		w = &write{id: op.Write, values: op.Values}
		v.writes[op.Write] = w
		v.order = append(v.order, op.Write)
		for i, val := range op.Values {
			v.byVal[val], v.valW[val] = i, op.Write
		}
	}
	w.attempts = append(w.attempts, op)
}

// maxPerKind bounds the anomalies kept per kind and partition; the rest are counted.
const maxPerKind = 10

func (v *view) flag(kind string, off int64, format string, args ...any) {
	v.counts[kind]++
	if v.counts[kind] > maxPerKind {
		return
	}
	v.out = append(v.out, Anomaly{Kind: kind, TP: v.tp, Offset: off,
		Detail: fmt.Sprintf(format, args...)})
}

// observe folds every read into offset → value and checks each read on its own.
func (v *view) observe() {
	for _, r := range v.reads {
		v.checkRead(r)
		for _, rec := range r.Records {
			if prev, ok := v.o2v[rec.Offset]; ok && prev != rec.Value {
				if !v.bad[rec.Offset] {
					v.bad[rec.Offset] = true
					v.flag(Inconsistent, rec.Offset, "read %q, earlier read %q (op %d)",
						rec.Value, prev, r.ID)
				}
				if r.Final {
					v.finals[rec.Offset] = rec.Value
				}
				continue
			}
			if _, ok := v.o2v[rec.Offset]; !ok {
				v.o2v[rec.Offset] = rec.Value
				v.occ[rec.Value] = append(v.occ[rec.Value], rec.Offset)
			}
			if r.Final {
				v.finals[rec.Offset] = rec.Value
			}
		}
	}
	for val := range v.occ {
		sort.Slice(v.occ[val], func(i, j int) bool { return v.occ[val][i] < v.occ[val][j] })
	}
}

// checkRead checks one read response: offsets below its HWM, contiguous, starting at
// the batch that holds the fetch offset.
func (v *view) checkRead(r *Op) {
	for i, rec := range r.Records {
		if rec.Offset >= r.HWM {
			v.flag(ReadPastHWM, rec.Offset, "op %d read offset %d with HWM %d", r.ID,
				rec.Offset, r.HWM)
			return
		}
		if i > 0 && rec.Offset != r.Records[i-1].Offset+1 {
			v.flag(SkippedRead, rec.Offset, "op %d: offset %d follows %d", r.ID, rec.Offset,
				r.Records[i-1].Offset)
			return
		}
	}
	if n := len(r.Records); n > 0 && r.FetchOffset >= 0 {
		first, last := r.Records[0].Offset, r.Records[n-1].Offset
		if first > r.FetchOffset || last < r.FetchOffset {
			v.flag(SkippedRead, r.FetchOffset, "op %d fetched %d, got [%d, %d]", r.ID,
				r.FetchOffset, first, last)
		}
	}
}

// checkValues flags values nobody wrote, visible refused writes and duplicates.
func (v *view) checkValues() {
	offs := sortedOffsets(v.o2v)
	seen := map[string]bool{}
	for _, off := range offs {
		val := v.o2v[off]
		wid, ok := v.valW[val]
		if !ok {
			v.flag(PhantomRead, off, "value %q was never written to this partition", val)
			continue
		}
		if seen[val] {
			continue
		}
		seen[val] = true
		w := v.writes[wid]
		copies, possible := len(v.occ[val]), 0
		for _, a := range w.attempts {
			if a.Outcome != Failed {
				possible++
			}
		}
		switch {
		case possible == 0:
			v.flag(RejectedVisible, off, "value %q of write %s, every attempt refused", val, wid)
		case copies > 1 && w.attempts[0].Idempotent && v.rotExplains(v.occ[val]):
		case w.attempts[0].Idempotent && copies > 1:
			v.flag(Duplicate, off, "idempotent write %s value %q at offsets %v", wid, val,
				v.occ[val])
		case copies > possible:
			v.flag(Duplicate, off, "write %s value %q at %d offsets %v, %d attempts", wid,
				val, copies, v.occ[val], possible)
		}
	}
}

// rotExplains reports whether rot explains an idempotent write's several copies: a
// copy in a batch that rotted is lost with the producer state it carried, so the
// producer's retry is a new write to the broker. At most one copy may lie above the
// partition's highest rot point, and at most one below per rot.
func (v *view) rotExplains(offs []int64) bool {
	to, n := v.h.rotted(v.tp)
	if n == 0 {
		return false
	}
	below := 0
	for _, o := range offs {
		if o < to {
			below++
		}
	}
	return len(offs)-below <= 1 && below <= n
}

// checkAcked checks every acknowledged append against the observations: lost writes
// (acks=all not readable at its offset in the final read) and writes seen elsewhere.
func (v *view) checkAcked() {
	for _, wid := range v.order {
		for _, a := range v.writes[wid].attempts {
			if a.Outcome != OK || a.Acks == 0 {
				continue
			}
			durable := a.Acks == -1 || (a.Acks == 1 && v.h.Acks1Durable)
			if !durable && v.h.crashAfter(a.Call) {
				continue // acks=1 promises nothing across a power loss or a failed fsync that began after it was sent
			}
			v.checkAck(a, durable)
		}
	}
}

func (v *view) checkAck(a *Op, durable bool) {
	for i, val := range a.Values {
		if a.Offset < 0 {
			if durable && len(v.occ[val]) == 0 && v.hasFin && v.final.Start == 0 {
				v.flag(LostWrite, -1, "acknowledged value %q (offset not returned) never read", val)
				return
			}
			continue
		}
		off := a.Offset + int64(i)
		if got, ok := v.o2v[off]; ok && got != val {
			kind := WrongOffset
			if durable {
				kind = LostWrite
			}
			v.flag(kind, off, "acknowledged %q at %d (op %d), read %q there", val, off, a.ID, got)
			return
		}
		if !durable || !v.hasFin || off < v.final.Start {
			continue
		}
		if off >= v.final.End {
			v.flag(LostWrite, off, "acknowledged %q at %d (op %d), final high-water mark %d",
				val, off, a.ID, v.final.End)
			return
		}
		if got, ok := v.finals[off]; !ok || got != val {
			v.flag(LostWrite, off, "acknowledged %q at %d (op %d), final read has %q", val,
				off, a.ID, got)
			return
		}
	}
}

// checkOrder checks that each idempotent producer's writes appear in the order it
// wrote them (Kafka's per-partition ordering promise for idempotent producers, which
// implies ordering within each key). The promise holds per producer id: writes a
// producer abandoned when it started a new session may land after later ones.
func (v *view) checkOrder() {
	type pos struct {
		seq int
		off int64
		key string
	}
	type session struct{ producer, session int }
	byProducer := map[session][]pos{}
	for _, wid := range v.order {
		w := v.writes[wid]
		a := w.attempts[0]
		if !a.Idempotent || len(v.occ[w.values[0]]) == 0 {
			continue
		}
		key := ""
		if len(a.Keys) > 0 {
			key = a.Keys[0]
		}
		s := session{a.Producer, a.Session}
		byProducer[s] = append(byProducer[s], pos{a.Seq, v.occ[w.values[0]][0], key})
	}
	producers := make([]session, 0, len(byProducer))
	for p := range byProducer {
		producers = append(producers, p)
	}
	sort.Slice(producers, func(i, j int) bool {
		if producers[i].producer != producers[j].producer {
			return producers[i].producer < producers[j].producer
		}
		return producers[i].session < producers[j].session
	})
	for _, p := range producers {
		ps := byProducer[p]
		sort.Slice(ps, func(i, j int) bool { return ps[i].seq < ps[j].seq })
		for i := 1; i < len(ps); i++ {
			if ps[i].off < ps[i-1].off {
				v.flag(OutOfOrder, ps[i].off, "producer %d session %d write #%d (key %q) at "+
					"%d before write #%d at %d", p.producer, p.session, ps[i].seq, ps[i].key,
					ps[i].off, ps[i-1].seq, ps[i-1].off)
				break
			}
		}
	}
}

// checkStale flags reads whose high-water mark is behind an acks=all write that was
// acknowledged before the read was invoked: the acknowledgement promised the write was
// committed, so later reads must see the high-water mark past it, as far as Kafka
// promises that (ServedEpoch). A leader's high-water mark never goes back, so a read
// served in the leader epoch that acknowledged the write is held to it. A new leader's
// lags until its followers have fetched from it: ListOffsets answers
// OFFSET_NOT_AVAILABLE until it reached the start of its epoch (KIP-207), so a
// ListOffsets read served in a later epoch is held to it too, but Kafka's Fetch serves
// the lagging mark, so a Fetch served in another epoch is not; nor is a read served by
// a deposed leader that has not learned it yet (an older epoch than the write's), nor
// one whose epoch is not known. A single node serves everything in epoch 0.
func (v *view) checkStale() {
	var acks, seen marks
	for _, wid := range v.order {
		for _, a := range v.writes[wid].attempts {
			if a.Outcome == OK && a.Acks == -1 && a.Offset >= 0 {
				end := a.Offset + int64(len(a.Values))
				acks.add(a.ServedEpoch, a.Return, end, a.ID)
				seen.add(a.ServedEpoch, a.Return, end, a.ID)
			}
		}
	}
	for _, r := range v.reads {
		seen.add(r.ServedEpoch, r.Return, r.HWM, r.ID)
	}
	acks.build()
	seen.build()
	for _, r := range v.reads {
		if r.ServedEpoch >= 0 {
			for _, e := range acks.epochs {
				if e < 0 || e > r.ServedEpoch || (e < r.ServedEpoch && r.FetchOffset >= 0) {
					continue
				}
				if b, ok := acks.best(e, r.Call); ok && b.val > r.HWM {
					v.flag(StaleRead, r.HWM, "read op %d saw hwm %d, but op %d was "+
						"acknowledged up to %d before the read began", r.ID, r.HWM, b.op, b.val)
					break
				}
			}
		}
		// A read below what another leadership showed before it began is one Kafka
		// allows (above, or flagged there): it is no observation of the partition's
		// current high-water mark, which the porcupine model checks.
		for _, e := range seen.epochs {
			if e == r.ServedEpoch && e >= 0 {
				continue
			}
			if b, ok := seen.best(e, r.Call); ok && b.val > r.HWM {
				if v.lagging == nil {
					v.lagging = map[int]bool{}
				}
				v.lagging[r.ID] = true
				break
			}
		}
	}
}

// mark is one observation of a partition's committed length: an acknowledgement's end
// or a read's high-water mark, returned at ret.
type mark struct {
	ret, val int64
	op       int
}

// marks are observations by the leader epoch that answered them, each epoch's sorted by
// return time with running maxima, for "the highest observed before t".
type marks struct {
	by     map[int32][]mark
	top    map[int32][]mark // top[e][i]: the highest val among by[e][:i+1]
	epochs []int32          // ascending
}

func (m *marks) add(epoch int32, ret, val int64, op int) {
	if m.by == nil {
		m.by = map[int32][]mark{}
	}
	m.by[epoch] = append(m.by[epoch], mark{ret, val, op})
}

func (m *marks) build() {
	m.top = make(map[int32][]mark, len(m.by))
	for e, ms := range m.by {
		sort.Slice(ms, func(i, j int) bool { return ms[i].ret < ms[j].ret })
		top := make([]mark, len(ms))
		for i, x := range ms {
			top[i] = x
			if i > 0 && top[i-1].val > x.val {
				top[i] = top[i-1]
			}
		}
		m.top[e] = top
		m.epochs = append(m.epochs, e)
	}
	sort.Slice(m.epochs, func(i, j int) bool { return m.epochs[i] < m.epochs[j] })
}

// best is epoch e's highest observation returned before t.
func (m *marks) best(e int32, t int64) (mark, bool) {
	ms := m.by[e]
	i := sort.Search(len(ms), func(i int) bool { return ms[i].ret >= t }) - 1
	if i < 0 {
		return mark{}, false
	}
	return m.top[e][i], true
}

func sortedOffsets(m map[int64]string) []int64 {
	offs := make([]int64, 0, len(m))
	for o := range m {
		offs = append(offs, o)
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs
}
