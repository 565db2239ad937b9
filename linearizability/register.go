package linearizability

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/sluicemq/sluice/core"
)

// Committed offsets: for each (group, partition) the offset a group committed is a
// register. An acknowledged OffsetCommit is a write that took effect within its
// window; one with an unknown outcome may take effect at any time after it was sent,
// or never; an OffsetFetch reads the register (-1 when nothing was committed). A
// commit the coordinator lost (acknowledged before it was durable, then a crash) shows
// up as a later read of an older value.

// RegisterKey names one committed-offset register.
type RegisterKey struct {
	Group string
	TP    core.TopicPartition
}

func (k RegisterKey) String() string { return k.Group + "/" + k.TP.String() }

// RegisterResult is the verdict on one register.
type RegisterResult struct {
	Key      RegisterKey
	Ops      int
	Result   porcupine.CheckResult
	Timeouts int // porcupine budgets that ran out (2: Result is TimedOut)
}

type regWrite struct {
	op    int
	value int64
	coord uint64 // the coordinator term that acknowledged it (0: one node, or unknown)
}

type regRead struct {
	op    int
	coord uint64 // the coordinator term that answered
}

// byCoord names the coordinator term of an operation in porcupine's descriptions.
func byCoord(term uint64) string {
	if term == 0 {
		return ""
	}
	return " (" + CoordString(term) + ")"
}

var registerModel = porcupine.Model{
	Init: func() interface{} { return int64(-1) },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		switch in := input.(type) {
		case regWrite:
			return true, in.value
		case regRead:
			return output.(int64) == state.(int64), state
		}
		return false, state
	},
	Hash: func(state interface{}) uint64 { return uint64(state.(int64)) },
	DescribeOperation: func(input, output interface{}) string {
		switch in := input.(type) {
		case regWrite:
			return fmt.Sprintf("op %d: commit %d%s", in.op, in.value, byCoord(in.coord))
		case regRead:
			return fmt.Sprintf("op %d: fetch -> %d%s", in.op, output.(int64),
				byCoord(in.coord))
		}
		return "?"
	},
	DescribeState: func(state interface{}) string { return fmt.Sprint(state.(int64)) },
}

// maxRegisterOps bounds porcupine's search per register; longer histories are not
// checked (reported as TooLarge).
const maxRegisterOps = 3000

// registerOps groups the committed-offset operations by register, keys sorted.
//
// A commit with an unknown outcome whose value no fetch ever returned is left out: if
// it took effect, something overwrote it before anyone looked, and removing it from
// any linearization leaves a linearization. Committed values are unique, so this keeps
// porcupine's search (exponential in the pending operations) small.
func registerOps(h *History) ([]RegisterKey, map[RegisterKey][]porcupine.Operation) {
	read := map[RegisterKey]map[int64]bool{}
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Kind == OpFetchCommitted && op.Outcome == OK {
			k := RegisterKey{op.Group, op.TP}
			if read[k] == nil {
				read[k] = map[int64]bool{}
			}
			read[k][op.Offset] = true
		}
	}
	byKey := map[RegisterKey][]porcupine.Operation{}
	for i := range h.Ops {
		op := &h.Ops[i]
		k := RegisterKey{op.Group, op.TP}
		switch {
		case op.Kind == OpCommit && op.Outcome == OK:
			byKey[k] = append(byKey[k], porcupine.Operation{ClientId: op.Client,
				Input: regWrite{op.ID, op.Offset, op.Coord}, Call: op.Call, Return: op.Return})
		case op.Kind == OpCommit && op.Outcome == Unknown && read[k][op.Offset]:
			byKey[k] = append(byKey[k], porcupine.Operation{ClientId: op.Client,
				Input: regWrite{op.ID, op.Offset, 0}, Call: op.Call, Return: never})
		case op.Kind == OpFetchCommitted && op.Outcome == OK:
			byKey[k] = append(byKey[k], porcupine.Operation{ClientId: op.Client,
				Input: regRead{op.ID, op.Coord}, Output: op.Offset, Call: op.Call,
				Return: op.Return})
		}
	}
	keys := make([]RegisterKey, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Group != keys[j].Group {
			return keys[i].Group < keys[j].Group
		}
		return keys[i].TP.Less(keys[j].TP)
	})
	return keys, byKey
}

// checkRegisters runs porcupine on every committed-offset register of h.
func checkRegisters(h *History, opt Options) []RegisterResult {
	keys, byKey := registerOps(h)
	out := make([]RegisterResult, 0, len(keys))
	for _, k := range keys {
		ops := byKey[k]
		res, timeouts := TooLarge, 0
		if len(ops) <= maxRegisterOps {
			res, timeouts = search(registerModel, ops, opt)
		}
		out = append(out, RegisterResult{Key: k, Ops: len(ops), Result: res,
			Timeouts: timeouts})
	}
	return out
}

// VisualizeRegister writes porcupine's HTML view of one committed-offset register.
func VisualizeRegister(h *History, k RegisterKey, path string, timeout time.Duration) error {
	_, byKey := registerOps(h)
	ops := byKey[k]
	if len(ops) == 0 {
		return fmt.Errorf("no operations on %s", k)
	}
	_, info := porcupine.CheckOperationsVerbose(registerModel, ops, timeout)
	return porcupine.VisualizePath(registerModel, info, path)
}

// readsAcrossMoves counts the successful OffsetFetch operations that returned a value
// another coordinator term acknowledged: a commit answered by one leader of the group's
// offsets partition, read at a later one. The register check covers them like any
// read; the count shows that a clustered run exercised coordinator moves.
func readsAcrossMoves(h *History) int {
	acked := map[RegisterKey]map[int64]uint64{}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind == OpCommit && op.Outcome == OK && op.Coord != 0 {
			k := RegisterKey{op.Group, op.TP}
			if acked[k] == nil {
				acked[k] = map[int64]uint64{}
			}
			acked[k][op.Offset] = op.Coord
		}
	}
	n := 0
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != OpFetchCommitted || op.Outcome != OK || op.Coord == 0 {
			continue
		}
		if c, ok := acked[RegisterKey{op.Group, op.TP}][op.Offset]; ok && c != op.Coord {
			n++
		}
	}
	return n
}
