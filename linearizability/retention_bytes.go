package linearizability

import (
	"fmt"
	"sort"
)

// Size retention, checked (docs/simulation.md, "What is checked"). retention.bytes
// deletes the oldest segments only while the partition, without the segment, still holds
// at least retention.bytes (Kafka: while size - segment size >= retention.bytes), and
// never the active one. So whenever size retention moves the log start to L (a segment
// base), the log from L to its end at that moment τ holds at least retention.bytes.
//
// The checker knows the stored size of every batch a read returned (Record.BatchBytes)
// and bounds that size from above. For the first read r to report a log start L:
//   - the cut to L happened at some τ after q's call, q being the last fetch before r
//     that reported a start below L (or at 0), and at or before r returned;
//   - W, the write observed at the lowest offset among those whose every attempt was
//     sent after r returned, was appended after τ: with no crash since q's call the log
//     end at τ was at most W's base offset and nothing below it changed since. When
//     crashes came later, only an acks=all write acknowledged before the first of them
//     will do: everything below it was durable then;
//   - if every offset in [L, W's base) was observed, their batches' bytes bound the size
//     at τ from above, and a size below every bounded retention.bytes the topic had by
//     r's return is a cut size retention did not allow.
//
// Other causes of a start L are excused first: a DeleteRecords that asked for L or more,
// and time retention (the segment ending at L could have expired: the record at L-1,
// or one made at the run's start when nobody saw it, was made more than
// retention.ms - 2·skew before r returned). Crashes inside the window, offsets nobody
// read: not judged. The check can miss, never invent. Under log.flush.policy=never,
// where a crash may replace records below the high-water mark, it is off.

// sizes indexes the observed batches of one partition: which offsets were observed and
// the stored bytes of the batches starting at each, as prefix sums.
type sizes struct {
	lo          int64
	known, size []int64 // prefix sums over offsets lo, lo+1, ...
}

func (v *view) sizes() *sizes {
	if len(v.o2v) == 0 {
		return &sizes{}
	}
	lo, hi := int64(1<<62), int64(-1)
	for off := range v.o2v {
		lo, hi = min(lo, off), max(hi, off)
	}
	n := hi - lo + 1
	if n > 1<<24 {
		return &sizes{}
	}
	bytes := make([]int32, n)
	seen := make([]bool, n)
	for _, r := range v.reads {
		for _, rec := range r.Records {
			i := rec.Offset - lo
			if i < 0 || i >= n || v.bad[rec.Offset] {
				continue
			}
			seen[i] = true
			bytes[i] = max(bytes[i], rec.BatchBytes)
		}
	}
	s := &sizes{lo: lo, known: make([]int64, n+1), size: make([]int64, n+1)}
	for i := int64(0); i < n; i++ {
		s.known[i+1], s.size[i+1] = s.known[i], s.size[i]+int64(bytes[i])
		if seen[i] {
			s.known[i+1]++
		}
	}
	return s
}

// between returns the stored bytes of the batches starting in [from, to), and false
// unless every offset there was observed.
func (s *sizes) between(from, to int64) (int64, bool) {
	n := int64(len(s.known)) - 1
	if s.known == nil || from < s.lo || to-s.lo > n || from >= to {
		return 0, false
	}
	i, j := from-s.lo, to-s.lo
	if s.known[j]-s.known[i] != j-i {
		return 0, false
	}
	return s.size[j] - s.size[i], true
}

// witness is an observed write: the earliest call of any of its attempts, its base
// offset as observed, and when an acks=all attempt was first acknowledged (MaxInt64:
// never).
type witness struct {
	firstCall, base, acked int64
}

// witnesses lists writes sorted by first call, with, for each index, the one of lowest
// base offset from there on: among every observed write (sure to have been appended
// after its first call, but where it landed may move in a crash), and among acks=all
// acknowledged ones (durable from their acknowledgement on).
type witnesses struct {
	ws        []witness
	any, acks []int
}

func (v *view) witnesses() *witnesses {
	const never = 1<<63 - 1
	var ws []witness
	for _, id := range v.order {
		w := v.writes[id]
		offs := v.occ[w.values[0]]
		if len(offs) == 0 {
			continue
		}
		one := witness{firstCall: never, base: offs[0], acked: never}
		for _, a := range w.attempts {
			one.firstCall = min(one.firstCall, a.Call)
			if a.Outcome == OK && a.Acks == -1 {
				one.acked = min(one.acked, a.Return)
			}
		}
		ws = append(ws, one)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].firstCall < ws[j].firstCall })
	x := &witnesses{ws: ws, any: make([]int, len(ws)+1), acks: make([]int, len(ws)+1)}
	x.any[len(ws)], x.acks[len(ws)] = -1, -1
	for i := len(ws) - 1; i >= 0; i-- {
		x.any[i], x.acks[i] = i, x.acks[i+1]
		if b := x.any[i+1]; b >= 0 && ws[b].base < ws[i].base {
			x.any[i] = b
		}
		if b := x.acks[i]; ws[i].acked < never && (b < 0 || ws[i].base < ws[b].base) {
			x.acks[i] = i
		}
	}
	return x
}

// after returns the lowest base offset of a write whose every attempt was sent after t
// that cannot have landed below the log end at t if no crash came from "from" on: any
// observed write when no crash came at all since, else an acks=all one acknowledged
// before the first crash since "from". ok is false when there is none.
func (x *witnesses) after(h *History, t, from int64) (base int64, ok bool) {
	i := sort.Search(len(x.ws), func(i int) bool { return x.ws[i].firstCall > t })
	crash := h.firstCrashFrom(from)
	if b := x.any[i]; b >= 0 && crash == 1<<63-1 {
		return x.ws[b].base, true
	}
	if b := x.acks[i]; b >= 0 && x.ws[b].acked < crash {
		return x.ws[b].base, true
	}
	return 0, false
}

// minRetentionBytes returns the smallest bounded retention.bytes topic had at any time
// up to t (-1: none).
func (h *History) minRetentionBytes(topic string, t int64) int64 {
	least := int64(-1)
	for _, s := range h.Retention {
		if s.At > t || (s.Topic != "" && s.Topic != topic) || s.Value < 0 ||
			s.Name != "retention.bytes" {
			continue
		}
		if least < 0 || s.Value < least {
			least = s.Value
		}
	}
	return least
}

// bytesCheck judges log starts under a bounded retention.bytes (see the top of the file).
type bytesCheck struct {
	v       *view
	sz      *sizes
	ws      *witnesses
	checked map[int64]bool
}

func (v *view) newBytesCheck() *bytesCheck {
	return &bytesCheck{v: v, sz: v.sizes(), ws: v.witnesses(), checked: map[int64]bool{}}
}

// tooFar returns a description of why read r's log start L was cut further than
// retention.bytes allows, or "" when that is not proven. ms is the smallest
// retention.ms the topic had by r's return (-1: none).
func (c *bytesCheck) tooFar(r *Op, ms int64) string {
	v, L := c.v, r.LogStart
	if c.checked[L] || v.h.FlushNever {
		return ""
	}
	c.checked[L] = true // the first read to report L bounds the cut best
	// The segment ending at L holds the record at L-1 (made at 0 at the earliest when
	// nobody saw it): if even that may have expired, time retention may have cut here.
	var built int64
	if last, ok := v.o2v[L-1]; ok && !v.bad[L-1] {
		if a := v.writes[v.valW[last]]; a != nil && a.attempts[0].Built > 0 {
			built = a.attempts[0].Built
		}
	}
	if ms >= 0 && built+ms*1_000_000-2*v.h.ClockSkewNs <= r.Return {
		return ""
	}
	from := int64(0) // the call of the last fetch before r that saw a start below L
	for _, q := range v.reads {
		if q.FetchOffset >= 0 && q.LogStart >= 0 && q.LogStart < L && q.Return <= r.Call {
			from = max(from, q.Call)
		}
	}
	end, ok := c.ws.after(v.h, r.Return, from)
	if !ok {
		return ""
	}
	size, ok := c.sz.between(L, end)
	bound := v.h.minRetentionBytes(baseTopic(v.tp.Topic), r.Return)
	if !ok || bound < 0 || size >= bound {
		return ""
	}
	return fmtBytesCut(r, L, end, size, bound)
}

func fmtBytesCut(r *Op, start, end, size, bound int64) string {
	return fmt.Sprintf("op %d saw log start %d at %s; the log from there to offset %d "+
		"(the end when the start moved, at most) holds %d bytes, less than "+
		"retention.bytes %d (at least) keeps", r.ID, start, fmtNs(r.Return), end, size, bound)
}
