package linearizability

import (
	"fmt"
	"math"
	"sort"

	"github.com/anishathalye/porcupine"
)

// never is the return time of an operation whose outcome is unknown: porcupine may
// linearize it at any point after its invocation.
const never = math.MaxInt64

// appendIn is a porcupine input: an append of n records that lands when the committed
// length equals one of cands, or (mayNot) does not land at all.
type appendIn struct {
	op     int // history op id, -1 for a filler
	n      int64
	cands  []int64
	mayNot bool
}

// readIn observes the committed length (a fetch's or ListOffsets' high-water mark).
type readIn struct {
	op  int
	hwm int64
}

// logModel is the partition as porcupine sees it: its committed length (the
// high-water mark), which only grows. Contents are checked by the anomaly checker.
var logModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{int64(0)} },
	Step: func(state, input, _ interface{}) []interface{} {
		s := state.(int64)
		switch in := input.(type) {
		case appendIn:
			var next []interface{}
			if in.mayNot {
				next = append(next, s)
			}
			for _, c := range in.cands {
				if c == s {
					next = append(next, s+in.n)
					break
				}
			}
			return next
		case readIn:
			if s == in.hwm {
				return []interface{}{s}
			}
		}
		return nil
	},
	Hash: func(state interface{}) uint64 { return uint64(state.(int64)) },
	DescribeOperation: func(input, _ interface{}) string {
		switch in := input.(type) {
		case appendIn:
			who := fmt.Sprintf("op %d", in.op)
			if in.op < 0 {
				who = "unobserved"
			}
			may := ""
			if in.mayNot {
				may = " (may not happen)"
			}
			return fmt.Sprintf("%s: append %d at %v%s", who, in.n, in.cands, may)
		case readIn:
			return fmt.Sprintf("op %d: read hwm=%d", in.op, in.hwm)
		}
		return "?"
	},
	DescribeState: func(state interface{}) string { return fmt.Sprintf("hwm=%d", state.(int64)) },
}

// Model returns the porcupine model of one partition (for visualization).
func Model() porcupine.Model { return logModel.ToModel() }

// operations turns a partition's view into porcupine operations.
func (v *view) operations() []porcupine.Operation {
	var ops []porcupine.Operation
	covered := map[int64]bool{} // offsets some must-happen op or observation accounts for
	maxEnd := int64(0)
	add := func(a *Op, in appendIn, ret int64) {
		call := a.Call
		ops = append(ops, porcupine.Operation{ClientId: a.Client, Input: in, Call: call,
			Output: nil, Return: ret})
		if len(in.cands) == 1 && !in.mayNot {
			for o := in.cands[0]; o < in.cands[0]+in.n; o++ {
				covered[o] = true
			}
			maxEnd = max(maxEnd, in.cands[0]+in.n)
		}
	}
	for _, wid := range v.order {
		v.writeOps(v.writes[wid], add)
	}
	for off := range v.o2v {
		covered[off] = true
		maxEnd = max(maxEnd, off+1)
	}
	for _, r := range v.reads {
		ops = append(ops, porcupine.Operation{ClientId: r.Client,
			Input: readIn{op: r.ID, hwm: r.HWM}, Call: r.Call, Return: r.Return})
		maxEnd = max(maxEnd, r.HWM)
	}
	return append(ops, fillers(covered, maxEnd)...)
}

// writeOps adds the porcupine operations of one logical write's attempts.
func (v *view) writeOps(w *write, add func(*Op, appendIn, int64)) {
	n := int64(len(w.values))
	claimed := map[int64]bool{}
	var unresolved []*Op
	for _, a := range w.attempts {
		switch {
		case a.Outcome == OK && a.Acks == -1:
			cands := []int64{a.Offset}
			if a.Offset < 0 {
				cands = v.bases(w)
			}
			for _, c := range cands {
				claimed[c] = true
			}
			add(a, appendIn{op: a.ID, n: n, cands: v.consistent(w, cands)}, a.Return)
		case a.Outcome == OK && a.Acks == 1 && a.Offset >= 0:
			claimed[a.Offset] = true
			// acks=1 says where, not when: the data becomes visible at the next fsync.
			add(a, appendIn{op: a.ID, n: n, cands: v.consistent(w, []int64{a.Offset}),
				mayNot: v.h.crashAfter(a.Return)}, never)
		default:
			unresolved = append(unresolved, a)
		}
	}
	var free []int64
	for _, b := range v.bases(w) {
		if !claimed[b] {
			free = append(free, b)
		}
	}
	if len(free) == 0 {
		return // never observed: whether it happened cannot matter to any read
	}
	for _, a := range unresolved {
		add(a, appendIn{op: a.ID, n: n, cands: free, mayNot: true}, never)
	}
}

// consistent keeps the candidate base offsets at which no read saw another value:
// an acknowledged write whose offset holds something else has nowhere to go, and
// porcupine then rejects the history.
func (v *view) consistent(w *write, cands []int64) []int64 {
	var out []int64
next:
	for _, c := range cands {
		for i, val := range w.values {
			if got, ok := v.o2v[c+int64(i)]; ok && got != val {
				continue next
			}
		}
		out = append(out, c)
	}
	return out
}

// bases returns the base offsets at which the write was observed, ascending.
func (v *view) bases(w *write) []int64 {
	set := map[int64]bool{}
	for i, val := range w.values {
		for _, off := range v.occ[val] {
			set[off-int64(i)] = true
		}
	}
	out := make([]int64, 0, len(set))
	for b := range set {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// fillers stands in for writes nobody observed: each maximal run of offsets below
// maxEnd that no observation or must-happen append accounts for was filled by
// something, at some time.
func fillers(covered map[int64]bool, maxEnd int64) []porcupine.Operation {
	var ops []porcupine.Operation
	for off := int64(0); off < maxEnd; {
		if covered[off] {
			off++
			continue
		}
		start := off
		for off < maxEnd && !covered[off] {
			off++
		}
		ops = append(ops, porcupine.Operation{ClientId: 0,
			Input: appendIn{op: -1, n: off - start, cands: []int64{start}}, Call: 0,
			Return: never})
	}
	return ops
}
