package linearizability

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// retentionHistory: write a (built at 10 ms) at offset 0, b at 1, then a read at 1 s
// seeing the log start at 1 (a gone).
func retentionHistory(retentionMs int64) *builder {
	var b builder
	b.appendOp("a", 1, 10e6, 11e6, OK, -1, 0).Built = 10e6
	b.appendOp("b", 1, 20e6, 21e6, OK, -1, 1).Built = 20e6
	b.read(30e6, 31e6, 0, 2, "a.0", "b.0")
	b.read(1e9, 1e9+1, 1, 2, "b.0").LogStart = 1
	b.h.Retention = []RetentionSetting{{Name: "retention.ms", Value: retentionMs},
		{Name: "retention.bytes", Value: -1}}
	b.h.ClockSkewNs = 10e6
	return &b
}

func TestLogStartPastWhatRetentionAllowsIsAnAnomaly(t *testing.T) {
	rep := check(t, &retentionHistory(604_800_000).h)
	require.Equal(t, 1, rep.Counts[LogStartTooFar], "%v", rep.Summary(10))

	// retention.ms 500: a, 990 ms old at the read, may be gone.
	rep = check(t, &retentionHistory(500).h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// a is 990 ms old at the read; the clocks may be 10 ms off each way, so retention
	// up to 1010 ms may have removed it, 1020 ms may not.
	rep = check(t, &retentionHistory(1020).h)
	require.Equal(t, 1, rep.Counts[LogStartTooFar], "%v", rep.Summary(10))
	rep = check(t, &retentionHistory(1005).h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))
}

func TestLogStartAllowedByDeleteRecordsOrSizeRetention(t *testing.T) {
	b := retentionHistory(604_800_000)
	b.h.Trims = []Trim{{Topic: tp0.Topic, Partition: 0, At: 500e6, Offset: 1}}
	rep := check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// A DeleteRecords asked for less than the log start shows: still an anomaly.
	b.h.Trims[0].Offset = 0
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[LogStartTooFar], "%v", rep.Summary(10))

	// Sent after the read: no excuse either.
	b.h.Trims[0] = Trim{Topic: tp0.Topic, Partition: 0, At: 2e9, Offset: -1}
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[LogStartTooFar], "%v", rep.Summary(10))

	b = retentionHistory(604_800_000)
	b.h.Retention = append(b.h.Retention, RetentionSetting{Topic: tp0.Topic, At: 900e6,
		Name: "retention.bytes", Value: 4096})
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))
}

func TestRecordsServedBelowTheLogStartAreAnAnomaly(t *testing.T) {
	// The answer itself says the log starts at 2, yet holds write a (offset 0) whole.
	var b builder
	b.appendOp("a", 1, 10, 11, OK, -1, 0)
	b.appendOp("b", 2, 20, 21, OK, -1, 1)
	b.read(30, 31, 0, 3, "a.0", "b.0", "b.1").LogStart = 2
	rep := check(t, &b.h)
	require.Equal(t, 1, rep.Counts[BelowLogStart], "%v", rep.Summary(10))

	// A batch straddling the log start may be served whole (the consumer skips).
	b = builder{}
	b.appendOp("a", 1, 10, 11, OK, -1, 0)
	b.appendOp("b", 2, 20, 21, OK, -1, 1)
	b.read(30, 31, 1, 3, "b.0", "b.1").LogStart = 2
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// An earlier answer (returned before this fetch was sent) reported start 2.
	b = builder{}
	b.appendOp("a", 1, 10, 11, OK, -1, 0)
	b.appendOp("b", 2, 20, 21, OK, -1, 1)
	b.read(30, 31, 2, 3, "b.1").LogStart = 2
	b.read(40, 41, 0, 3, "a.0", "b.0", "b.1")
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[BelowLogStart], "%v", rep.Summary(10))

	// ... unless a crash came between (a log start may be lost with it).
	b.h.Crashes = []Crash{{At: 35}}
	rep = check(t, &b.h)
	require.Zero(t, rep.Counts[BelowLogStart], "%v", rep.Summary(10))

	// ... or the partition changed leader between: the new leader runs its own
	// retention and may still hold what the old one deleted (seed 104).
	b.h.Crashes = nil
	b.h.Ops[2].ServedEpoch, b.h.Ops[3].ServedEpoch = 0, 1
	rep = check(t, &b.h)
	require.Zero(t, rep.Counts[BelowLogStart], "%v", rep.Summary(10))
	b.h.Ops[3].ServedEpoch = 0
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[BelowLogStart], "the same epoch: %v", rep.Summary(10))
}

func TestRecordsBelowAnAcknowledgedDeleteRecordsAreAnAnomalyAfterACrash(t *testing.T) {
	// DeleteRecords to 2 was acknowledged at 32; a crash at 35 cannot bring a.0 back.
	var b builder
	b.appendOp("a", 1, 10, 11, OK, -1, 0)
	b.appendOp("b", 2, 20, 21, OK, -1, 1)
	b.h.Trims = []Trim{{Topic: tp0.Topic, Partition: tp0.Partition, At: 30, Offset: 2,
		Acked: true, Return: 32, LowWatermark: 2}}
	b.h.Crashes = []Crash{{At: 35}}
	b.read(40, 41, 0, 3, "a.0", "b.0", "b.1")
	rep := check(t, &b.h)
	require.Equal(t, 1, rep.Counts[BelowLogStart], "%v", rep.Summary(10))
	require.Contains(t, strings.Join(rep.Summary(10), "\n"), "acknowledged DeleteRecords")

	// Not acknowledged (unknown outcome or refused): the start may have stayed put.
	b.h.Trims[0].Acked = false
	rep = check(t, &b.h)
	require.Zero(t, rep.Counts[BelowLogStart], "%v", rep.Summary(10))

	// Acknowledged, but the topic was deleted since: its re-creation starts afresh.
	b.h.Trims[0].Acked = true
	b.h.Deletions = []Deletion{{Topic: tp0.Topic, At: 36}}
	rep = check(t, &b.h)
	require.Zero(t, rep.Counts[BelowLogStart], "%v", rep.Summary(10))
}
