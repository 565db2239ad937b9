package linearizability

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// timedHistory: writes a (2 records, timestamp 100), b (timestamp 300) and c
// (timestamp 200) at offsets 0, 2 and 3, a read of all of them, then a fetch after the
// lookups reporting log start 0.
func timedHistory() *builder {
	var b builder
	b.appendOp("a", 2, 10, 11, OK, -1, 0)
	b.appendOp("b", 1, 20, 21, OK, -1, 2)
	b.appendOp("c", 1, 30, 31, OK, -1, 3)
	r := b.read(40, 41, 0, 4, "a.0", "a.1", "b.0", "c.0")
	for i, ts := range []int64{100, 100, 300, 200} {
		r.Records[i].Timestamp = ts
	}
	b.read(100, 101, 4, 4).LogStart = 0
	return &b
}

func lookup(target, off, ts int64) TimeLookup {
	return TimeLookup{TP: tp0, Call: 50, Return: 60, Target: target, Offset: off,
		Timestamp: ts}
}

func TestTimeLookupMustAnswerTheFirstRecordReachingTheTime(t *testing.T) {
	b := timedHistory()
	// Right: 150 → b at 2 (the first record at or after it, not c's nearer 200);
	// 100 → offset 0; 301 → none.
	b.h.TimeLookups = []TimeLookup{lookup(150, 2, 300), lookup(100, 0, 100),
		lookup(301, -1, -1)}
	rep := check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// Skipping b (offset 2) for c (offset 3), as a time index that starts the scan
	// one entry late would.
	b.h.TimeLookups = []TimeLookup{lookup(150, 3, 200)}
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[TimeMismatch], "%v", rep.Summary(10))

	// The answered record carries another timestamp than the answer says.
	b.h.TimeLookups = []TimeLookup{lookup(150, 2, 250)}
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[TimeMismatch], "%v", rep.Summary(10))

	// None, though b (below a high-water mark seen before the call) reaches 250.
	b.h.TimeLookups = []TimeLookup{lookup(250, -1, -1)}
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[TimeMismatch], "%v", rep.Summary(10))
}

func TestTimeLookupAllowsRecordsThatMayBeBelowTheLogStart(t *testing.T) {
	// The only fetch after the lookup reports log start 3: b may have been gone.
	b := timedHistory()
	b.h.Ops[len(b.h.Ops)-1].LogStart = 3
	b.h.TimeLookups = []TimeLookup{lookup(150, 3, 200)}
	rep := check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// With a crash between the lookup and that fetch the log start it reports bounds
	// nothing (a crash may take back a start not yet durable): not judged.
	b = timedHistory()
	b.h.Crashes = []Crash{{At: 70}}
	b.h.TimeLookups = []TimeLookup{lookup(150, 3, 200)}
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// No fetch after the lookup: the log start is unknown, nothing judged.
	b = timedHistory()
	b.h.Ops = b.h.Ops[:len(b.h.Ops)-1]
	b.h.TimeLookups = []TimeLookup{lookup(150, 3, 200)}
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))
}
