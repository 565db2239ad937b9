package linearizability

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// checkTiming decides the same question as porcupine on the log model, exactly and in
// O(n log n): since every append has one base offset and the state (the committed
// length) only grows, the order of a linearization is forced — appends by base offset,
// each read between the append that ends at its high-water mark and the one that starts
// there. What remains is to give each operation a point within [Call, Return] that
// never goes back along that order; taking each point as early as possible is optimal.
// It returns "" when the history is linearizable, else why not.
func checkTiming(ops []porcupine.Operation) string {
	appends := map[int64]porcupine.Operation{} // by base
	readsAt := map[int64][]porcupine.Operation{}
	var bases []int64
	for _, op := range ops {
		switch in := op.Input.(type) {
		case appendIn:
			if prev, dup := appends[in.base]; dup {
				return fmt.Sprintf("%s and %s both start at offset %d",
					describe(prev), describe(op), in.base)
			}
			appends[in.base] = op
			bases = append(bases, in.base)
		case readIn:
			readsAt[in.hwm] = append(readsAt[in.hwm], op)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	t, state := int64(-1<<62), int64(0)
	var last porcupine.Operation
	for i := 0; ; i++ {
		// The reads that saw the current state, in any order.
		groupEnd := t
		for _, r := range readsAt[state] {
			at := max(t, r.Call)
			if at > r.Return {
				return fmt.Sprintf("%s returned at %s, before %s could take effect (%s)",
					describe(r), ts(r.Return), describe(last), ts(t))
			}
			groupEnd = max(groupEnd, at)
		}
		delete(readsAt, state)
		t = groupEnd
		if i == len(bases) {
			break
		}
		a := appends[bases[i]]
		in := a.Input.(appendIn)
		if in.base != state {
			return fmt.Sprintf("%s starts at offset %d but the log only reaches %d there",
				describe(a), in.base, state)
		}
		t = max(t, a.Call)
		if t > a.Return {
			return fmt.Sprintf("%s returned at %s, but it could only take effect after "+
				"the reads of offset %d (%s)", describe(a), ts(a.Return), state, ts(t))
		}
		state += in.n
		last = a
	}
	if len(readsAt) > 0 {
		hwms := make([]int64, 0, len(readsAt))
		for h := range readsAt {
			hwms = append(hwms, h)
		}
		sort.Slice(hwms, func(i, j int) bool { return hwms[i] < hwms[j] })
		return fmt.Sprintf("%s saw high-water mark %d, which the log never had (it "+
			"reaches %d)", describe(readsAt[hwms[0]][0]), hwms[0], state)
	}
	return ""
}

func describe(op porcupine.Operation) string {
	if op.Input == nil {
		return "the start of the log"
	}
	return logModel.DescribeOperation(op.Input, nil)
}

func ts(t int64) string {
	if t == never {
		return "never"
	}
	return fmt.Sprintf("t=%d.%06d", t/1e9, (t%1e9)/1e3)
}
