package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// runThrottledWorlds runs seeds 1–3 with sets, requires each to pass every check with
// writes acknowledged and read back, and requires some reply to have muted its
// connection (some client went over its quota).
func runThrottledWorlds(t *testing.T, sets [][2]string) {
	t.Helper()
	muted := 0
	for _, seed := range []uint64{1, 2, 3} {
		run := RunOne(seed, sets, 0, Options{})
		require.NoError(t, run.Err)
		res := run.Result
		require.True(t, res.Pass, "seed %d: %v", seed, res.Failures)
		require.Positive(t, res.Report.Acknowledged, "seed %d: writes acknowledged", seed)
		require.Positive(t, res.Report.Reads, "seed %d: reads", seed)
		t.Logf("seed %d %v: %d muting replies", seed, sets, res.Stats.Muted)
		muted += res.Stats.Muted
	}
	require.Positive(t, muted, "some client went over its quota")
}

// TestThrottledClientsStillMakeProgress runs worlds whose every client id is held to
// 2000 bytes/s (client-id=<default> quotas): replies mute connections (rule E8), and
// the runs still pass every check with writes acknowledged and read back.
func TestThrottledClientsStillMakeProgress(t *testing.T) {
	runThrottledWorlds(t, [][2]string{{"quota.bytes", "2000"}})
}

// TestRequestQuotaThrottledClientsStillMakeProgress: the same with every client id
// held to 1 % of a handler's time, charged with each request step's virtual I/O time
// (iolat.go reportHandlerTime).
func TestRequestQuotaThrottledClientsStillMakeProgress(t *testing.T) {
	runThrottledWorlds(t, [][2]string{{"quota.percent", "1"}})
}
