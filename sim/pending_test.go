package sim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A failed run carries every broker's pending work at its first failure and at its
// end (pending.go), for the artifacts. A failure forced in the middle of seed 1's
// faulty phase finds the node serving clients: parked requests are listed with what
// they wait for.
func TestFailedRunReportsPendingWork(t *testing.T) {
	w, err := New(Draw(1), Options{})
	require.NoError(t, err)
	w.at(1500*ms, KindPhase, -1, 0, 0, func() { w.fail("test", "forced failure") })
	res := w.Run()
	require.False(t, res.Pass)
	require.NotEmpty(t, res.PendingAtFailure)
	require.True(t, strings.HasPrefix(res.PendingAtFailure[0], "pending work at the first "+
		"failure ("), res.PendingAtFailure[0])
	text := strings.Join(res.PendingAtFailure, "\n")
	require.Contains(t, text, "node 1 (incarnation ")
	t.Logf("%s", text)
	require.Regexp(t, `(fetch|produce|offset-write|sync) +age=`, text,
		"a node serving clients waits on something")
	require.NotEmpty(t, res.PendingAtEnd)
	require.Contains(t, pendingText(&res), "pending work at the end of the run")

	// A passing run captures nothing.
	w, err = New(Draw(1), Options{})
	require.NoError(t, err)
	res = w.Run()
	require.True(t, res.Pass)
	require.Empty(t, res.PendingAtFailure)
	require.Empty(t, res.PendingAtEnd)
}
