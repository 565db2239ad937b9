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
// length equals base.
type appendIn struct {
	op   int // history op id, -1 for a filler
	base int64
	n    int64
}

// readIn observes the committed length (a fetch's or ListOffsets' high-water mark).
type readIn struct {
	op  int
	hwm int64
}

// logModel is the partition as porcupine sees it: its committed length (the
// high-water mark), which only grows. Contents are checked by the anomaly checker, and
// every append given to porcupine has one known base offset (see operations), so the
// model is deterministic and its search stays close to linear.
var logModel = porcupine.Model{
	Init: func() interface{} { return int64(0) },
	// Step hands back the state it was given, not s, whenever the state does not change:
	// boxing an int64 into an interface allocates, and porcupine's search calls Step
	// mostly for steps that fail (profiled: a quarter of a seed's CPU went there).
	Step: func(state, input, _ interface{}) (bool, interface{}) {
		s := state.(int64)
		switch in := input.(type) {
		case appendIn:
			if s == in.base {
				return true, s + in.n
			}
		case readIn:
			return s == in.hwm, state
		}
		return false, state
	},
	Hash: func(state interface{}) uint64 { return uint64(state.(int64)) },
	DescribeOperation: func(input, _ interface{}) string {
		switch in := input.(type) {
		case appendIn:
			if in.op < 0 {
				return fmt.Sprintf("unobserved writes: [%d, %d)", in.base, in.base+in.n)
			}
			return fmt.Sprintf("op %d: append [%d, %d)", in.op, in.base, in.base+in.n)
		case readIn:
			return fmt.Sprintf("op %d: read hwm=%d", in.op, in.hwm)
		}
		return "?"
	},
	DescribeState: func(state interface{}) string { return fmt.Sprintf("hwm=%d", state.(int64)) },
}

// Model returns the porcupine model of one partition (for visualization).
func Model() porcupine.Model { return logModel }

// operations turns a partition's view into porcupine operations. Each append that
// took effect is placed at one base offset: its acknowledged one, or where reads saw
// it. Appends that may have taken effect but were never seen are left out; the offsets
// nobody accounts for become filler appends (something was written there, at some
// time), so the model can still check every high-water mark.
func (v *view) operations() []porcupine.Operation {
	var ops []porcupine.Operation
	covered := map[int64]bool{}
	maxEnd := int64(0)
	place := func(a *Op, base, n, ret int64) {
		ops = append(ops, porcupine.Operation{ClientId: a.Client,
			Input: appendIn{op: a.ID, base: base, n: n}, Call: a.Call, Return: ret})
		for o := base; o < base+n; o++ {
			covered[o] = true
		}
		maxEnd = max(maxEnd, base+n)
	}
	for _, wid := range v.order {
		v.writeOps(v.writes[wid], place)
	}
	// An observed offset no placed append covers (an idempotent write's copy in a
	// batch lost to rot, which its producer's retry wrote again) is a filler too: what
	// was there is checked by the anomaly pass.
	for off := range v.o2v {
		maxEnd = max(maxEnd, off+1)
	}
	cuts := map[int64]bool{}
	for _, r := range v.reads {
		if v.lagging[r.ID] {
			continue
		}
		ops = append(ops, porcupine.Operation{ClientId: r.Client,
			Input: readIn{op: r.ID, hwm: r.HWM}, Call: r.Call, Return: r.Return})
		maxEnd = max(maxEnd, r.HWM)
		cuts[r.HWM] = true
	}
	return append(ops, fillers(covered, cuts, maxEnd)...)
}

// writeOps places the attempts of one logical write.
//
// Acknowledged attempts sit at their returned offset: acks=all ones with their real
// return time, acks=1 ones with an unknown return time (acks=1 says where, not when
// the data becomes visible) and only if no crash could have undone them or a read saw
// them there. The remaining observed copies go to the attempts whose outcome is
// unknown, earliest invocation to lowest offset: if any assignment of copies to
// attempts is linearizable this one is, since an earlier-invoked attempt can stand in
// for a later one anywhere.
func (v *view) writeOps(w *write, place func(a *Op, base, n, ret int64)) {
	n := int64(len(w.values))
	seen := v.bases(w)
	isSeen := func(b int64) bool {
		i := sort.Search(len(seen), func(i int) bool { return seen[i] >= b })
		return i < len(seen) && seen[i] == b
	}
	claimed := map[int64]bool{}
	var unresolved []*Op
	for _, a := range w.attempts {
		switch {
		case a.Outcome == OK && a.Acks == -1 && a.Offset >= 0:
			claimed[a.Offset] = true
			place(a, a.Offset, n, a.Return)
		case a.Outcome == OK && a.Acks == 1 && a.Offset >= 0:
			if !v.h.crashAfter(a.Call) || isSeen(a.Offset) {
				claimed[a.Offset] = true
				place(a, a.Offset, n, never)
			}
		case a.Outcome == OK:
			unresolved = append(unresolved, a) // acknowledged without an offset
		case a.Outcome == Unknown:
			unresolved = append(unresolved, a)
		}
	}
	sort.SliceStable(unresolved, func(i, j int) bool { return unresolved[i].Call < unresolved[j].Call })
	for _, b := range seen {
		if claimed[b] || len(unresolved) == 0 {
			continue
		}
		a := unresolved[0]
		unresolved = unresolved[1:]
		ret := int64(never)
		if a.Outcome == OK {
			ret = a.Return
		}
		place(a, b, n, ret)
	}
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
// maxEnd that no observation or placed append accounts for was filled by something,
// at some time. Runs are cut at every high-water mark a read reported, since a batch
// boundary lies there.
func fillers(covered, cuts map[int64]bool, maxEnd int64) []porcupine.Operation {
	var ops []porcupine.Operation
	for off := int64(0); off < maxEnd; {
		if covered[off] {
			off++
			continue
		}
		start := off
		for off < maxEnd && !covered[off] && (off == start || !cuts[off]) {
			off++
		}
		ops = append(ops, porcupine.Operation{ClientId: 0,
			Input: appendIn{op: -1, base: start, n: off - start}, Call: 0, Return: never})
	}
	return ops
}
