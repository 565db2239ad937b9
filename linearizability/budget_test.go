package linearizability

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
)

// slowSearch models a porcupine search that needs `need` of wall time: a shorter
// budget runs out (Unknown), a longer one gets the real answer.
func slowSearch(t *testing.T, need time.Duration) {
	real := porcupineCheck
	t.Cleanup(func() { porcupineCheck = real })
	porcupineCheck = func(m porcupine.Model, ops []porcupine.Operation,
		budget time.Duration) porcupine.CheckResult {
		if budget < need {
			return porcupine.Unknown
		}
		return real(m, ops, budget)
	}
}

func budgetHistory() *History {
	var b builder
	b.appendOp("a", 2, 10, 20, OK, -1, 0)
	b.read(25, 26, 0, 2, "a.0", "a.1")
	commitOp(&b, "g", 5, 30, 40, OK)
	fetchCommitted(&b, "g", 5, 50, 60)
	return &b.h
}

func TestPorcupineTimeoutIsRetriedWithALongerBudget(t *testing.T) {
	slowSearch(t, 2*time.Second)
	rep := Check(budgetHistory(), Options{Timeout: time.Second, RetryTimeout: 3 * time.Second})
	require.True(t, rep.OK(), "%v", rep.Summary(10))
	require.Equal(t, 2, rep.PorcupineTimeouts, "the partition and the register")
	require.Equal(t, 0, rep.Unresolved)
	require.Equal(t, porcupine.Ok, rep.Partitions[0].Result)
	require.Contains(t, rep.Summary(10)[1], "porcupine timeouts: 2 (0 unresolved")
}

func TestPorcupineTimeoutNotResolvedFailsTheCheck(t *testing.T) {
	slowSearch(t, time.Hour)
	rep := Check(budgetHistory(), Options{Timeout: time.Second, RetryTimeout: 3 * time.Second})
	require.False(t, rep.OK(), "a search that never ended is not a pass")
	require.Equal(t, 2, rep.PorcupineTimeouts)
	require.Equal(t, 2, rep.Unresolved)
	require.Equal(t, 2, rep.Counts["linearizability-timeout"])
	require.Equal(t, TimedOut, rep.Partitions[0].Result)
	require.Equal(t, TimedOut, rep.Registers[0].Result)
	require.False(t, rep.Partitions[0].Linearizable())
}

func TestDefaultRetryBudgetIsLonger(t *testing.T) {
	o := Options{Timeout: time.Second}
	o.budgets()
	require.Equal(t, 4*time.Second, o.RetryTimeout)
	o = Options{}
	o.budgets()
	require.Equal(t, 20*time.Second, o.Timeout)
}

// The retry budget grows with the load per CPU, within [1, maxStretch]: a busy machine
// does not fail a search a quiet one finishes, and an intractable one still fails.
func TestRetryBudgetStretchesWithLoad(t *testing.T) {
	require.Equal(t, 1.0, stretchFor("0.50 0.40 0.30 1/100 42", 2))
	require.Equal(t, 1.0, stretchFor("2.00 1.00 1.00 1/100 42", 2))
	require.Equal(t, 5.0, stretchFor("10.00 9.00 8.00 3/300 42", 2))
	require.Equal(t, float64(maxStretch), stretchFor("100.0 90.0 80.0 3/300 42", 2))
	require.Equal(t, 1.0, stretchFor("garbage", 2))
	require.Equal(t, 1.0, stretchFor("", 2))
	require.GreaterOrEqual(t, loadStretch(), 1.0)
}
