package linearizability

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A record read below its high-water mark, an unacknowledged write's, is gone from
// the final read: it was exposed before it was committed.
func TestCheckFindsAReadRecordThatDisappeared(t *testing.T) {
	for _, trimmed := range []bool{false, true} {
		var b builder
		b.appendOp("a", 1, 10, 20, OK, -1, 0)
		b.appendOp("b", 1, 30, 0, Unknown, 1, -1)
		b.read(40, 50, 0, 2, "a.0", "b.0")
		fin := b.read(100, 110, 0, 1, "a.0")
		fin.Final = true
		b.h.Finals = []Final{{TP: tp0, Start: 0, End: 1}}
		if trimmed { // DeleteRecords/retention took the front past both: nothing to see
			fin.Records, fin.FetchOffset, fin.HWM = nil, 2, 2
			b.h.Finals = []Final{{TP: tp0, Start: 2, End: 2}}
		}
		rep := check(t, &b.h)
		want := 1
		if trimmed {
			want = 0
		}
		require.Equal(t, want, rep.Counts[LostRead], "trimmed=%v: %v", trimmed,
			rep.Summary(10))
	}
}

// Under log.flush.policy=never a power loss may take back what the high-water mark
// covered; that is the unsafe setting's known cost, not this anomaly.
func TestCheckExcusesALostReadUnderFlushNeverWithACrash(t *testing.T) {
	var b builder
	b.appendOp("b", 1, 30, 0, Unknown, 1, -1)
	b.read(40, 50, 0, 1, "b.0")
	fin := b.read(100, 110, 0, 0)
	fin.Final = true
	b.h.Finals = []Final{{TP: tp0, Start: 0, End: 0}}
	b.h.FlushNever, b.h.Crashes = true, []Crash{{Node: 0, At: 60}}
	rep := check(t, &b.h)
	require.Zero(t, rep.Counts[LostRead], "%v", rep.Summary(10))
}
