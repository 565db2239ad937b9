package linearizability

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"
)

// genHistory draws a history of the log model: a sequential execution with each
// operation's window drawn around its linearization point, then maybe one mutation
// that may or may not break it.
func genHistory(t *rapid.T) []porcupine.Operation {
	n := rapid.IntRange(1, 14).Draw(t, "n")
	var ops []porcupine.Operation
	state, now := int64(0), int64(0)
	for i := 0; i < n; i++ {
		now += rapid.Int64Range(0, 3).Draw(t, "gap")
		call := now - rapid.Int64Range(0, 6).Draw(t, "before")
		ret := now + rapid.Int64Range(0, 6).Draw(t, "after")
		if rapid.Bool().Draw(t, "read") {
			ops = append(ops, porcupine.Operation{Input: readIn{op: i, hwm: state},
				Call: call, Return: ret})
			continue
		}
		size := rapid.Int64Range(1, 3).Draw(t, "size")
		if rapid.IntRange(0, 3).Draw(t, "unknown") == 0 {
			ret = never
		}
		ops = append(ops, porcupine.Operation{Input: appendIn{op: i, base: state, n: size},
			Call: call, Return: ret})
		state += size
	}
	if rapid.Bool().Draw(t, "mutate") {
		i := rapid.IntRange(0, len(ops)-1).Draw(t, "victim")
		switch in := ops[i].Input.(type) {
		case readIn:
			in.hwm += rapid.Int64Range(-2, 2).Draw(t, "hwm delta")
			ops[i].Input = in
		case appendIn:
			shift := rapid.Int64Range(-4, 4).Draw(t, "time shift")
			ops[i].Call += shift
			if ops[i].Return != never {
				ops[i].Return += shift
			}
		}
		if ops[i].Return < ops[i].Call {
			ops[i].Return = ops[i].Call
		}
	}
	return ops
}

// TestTimingCheckerAgreesWithPorcupine: the exact checker and porcupine decide the same
// question on the same model, on valid and broken histories alike.
func TestTimingCheckerAgreesWithPorcupine(t *testing.T) {
	legal, illegal := 0, 0
	rapid.Check(t, func(t *rapid.T) {
		ops := genHistory(t)
		why := checkTiming(ops)
		res := porcupine.CheckOperationsTimeout(Model(), ops, 10*time.Second)
		if (res == porcupine.Ok) != (why == "") {
			t.Fatalf("porcupine says %s, timing checker says %q", res, why)
		}
		if why == "" {
			legal++
		} else {
			illegal++
		}
	})
	if legal == 0 || illegal == 0 {
		t.Fatalf("the generator must produce both kinds: %d legal, %d illegal", legal, illegal)
	}
}
