package sim

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A porcupine search that cannot finish in its budget, nor in the longer retry, fails
// the seed: a nanosecond budget makes every search of a real history run out.
func TestPorcupineTimeoutFailsTheSeed(t *testing.T) {
	run := RunOne(1, nil, 2000, Options{CheckTimeout: 1, CheckRetryTimeout: 1})
	require.NoError(t, run.Err)
	require.False(t, run.Result.Pass)
	require.True(t, run.Result.Has("linearizability-timeout"), "%v", run.Result.Kinds())
	require.Positive(t, run.Result.Report.Unresolved)
	rep := run.Result.Report
	require.Contains(t, run.Result.Summary(), "porcupine timeouts: "+
		strconv.Itoa(rep.PorcupineTimeouts)+" ("+strconv.Itoa(rep.Unresolved)+
		" unresolved after the longer budget)")
}
