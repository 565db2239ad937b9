package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestThrottledClientsStillMakeProgress runs worlds whose every client id is held to
// 2000 bytes/s (client-id=<default> quotas): replies mute connections (rule E8), and
// the runs still pass every check with writes acknowledged and read back.
func TestThrottledClientsStillMakeProgress(t *testing.T) {
	muted := 0
	for _, seed := range []uint64{1, 2, 3} {
		run := RunOne(seed, [][2]string{{"quota.bytes", "2000"}}, 0, Options{})
		require.NoError(t, run.Err)
		res := run.Result
		require.True(t, res.Pass, "seed %d: %v", seed, res.Failures)
		require.Positive(t, res.Report.Acknowledged, "seed %d: writes acknowledged", seed)
		require.Positive(t, res.Report.Reads, "seed %d: reads", seed)
		muted += res.Stats.Muted
	}
	require.Positive(t, muted, "some client went over its quota")
}

// TestRequestQuotaThrottledClientsStillMakeProgress runs worlds whose every client id
// may take 1 % of a handler's time, charged with each request step's virtual I/O time
// (iolat.go reportHandlerTime): replies mute connections, and the runs still pass every
// check with writes acknowledged and read back.
func TestRequestQuotaThrottledClientsStillMakeProgress(t *testing.T) {
	muted := 0
	for _, seed := range []uint64{1, 2, 3} {
		run := RunOne(seed, [][2]string{{"quota.percent", "1"}}, 0, Options{})
		require.NoError(t, run.Err)
		res := run.Result
		require.True(t, res.Pass, "seed %d: %v", seed, res.Failures)
		require.Positive(t, res.Report.Acknowledged, "seed %d: writes acknowledged", seed)
		require.Positive(t, res.Report.Reads, "seed %d: reads", seed)
		t.Logf("seed %d: %d muting replies, %d acknowledged", seed, res.Stats.Muted,
			res.Report.Acknowledged)
		muted += res.Stats.Muted
	}
	require.Positive(t, muted, "some client went over its request quota")
}
