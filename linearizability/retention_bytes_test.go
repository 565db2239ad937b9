package linearizability

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// bytesHistory: five one-record writes of 100 stored bytes each at offsets 0..4 (e,
// at 4, sent after every read), a read of 0..3, then a read at 1 s reporting log
// start `start`; retention.bytes 250 and retention.ms at its default.
func bytesHistory(start int64) *builder {
	var b builder
	for i, w := range []string{"a", "b", "c", "d"} {
		at := int64(10+i) * 1e6
		b.appendOp(w, 1, at, at+1e6, OK, -1, int64(i)).Built = at
	}
	r := b.read(20e6, 21e6, 0, 4, "a.0", "b.0", "c.0", "d.0")
	for i := range r.Records {
		r.Records[i].BatchBytes = 100
	}
	b.read(1e9, 1e9+1, 4, 4).LogStart = start
	b.appendOp("e", 1, 2e9, 2e9+1e6, OK, -1, 4).Built = 2e9
	r = b.read(3e9, 3e9+1, 4, 5, "e.0")
	r.Records[0].BatchBytes = 100
	r.LogStart = start
	b.h.Retention = []RetentionSetting{{Name: "retention.ms", Value: 604_800_000},
		{Name: "retention.bytes", Value: -1},
		{Topic: tp0.Topic, Name: "retention.bytes", Value: 250}}
	return &b
}

func TestLogStartPastWhatRetentionBytesAllowsIsAnAnomaly(t *testing.T) {
	// Start 1: 300 bytes remain (b, c, d), at least the 250 kept.
	rep := check(t, &bytesHistory(1).h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// Start 2: at most 200 bytes (c, d) remained when the start moved: one segment too
	// many went.
	rep = check(t, &bytesHistory(2).h)
	require.Equal(t, 1, rep.Counts[LogStartTooFar], "%v", rep.Summary(10))
}

func TestRetentionBytesCheckForgivesWhatItCannotProve(t *testing.T) {
	// A crash since the start was last seen below 2: the log end at the cut is unknown.
	b := bytesHistory(2)
	b.h.Crashes = []Crash{{At: 500e6}}
	rep := check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// A crash after e was acknowledged (acks=all: durable) changes nothing.
	b = bytesHistory(2)
	b.h.Crashes = []Crash{{At: 2.5e9}}
	rep = check(t, &b.h)
	require.Equal(t, 1, rep.Counts[LogStartTooFar], "%v", rep.Summary(10))

	// ... unless e was only acks=1.
	b = bytesHistory(2)
	b.h.Crashes = []Crash{{At: 2.5e9}}
	b.h.Ops[6].Acks = 1
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// d (offset 3) never read: the size is not known.
	b = bytesHistory(2)
	b.h.Ops[4].Records = b.h.Ops[4].Records[:3]
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// b (offset 1, the end of the cut segment) may have expired by time.
	b = bytesHistory(2)
	b.h.Retention[0].Value = 500
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// A DeleteRecords to 2 was sent.
	b = bytesHistory(2)
	b.h.Trims = []Trim{{Topic: tp0.Topic, Partition: 0, At: 900e6, Offset: 2}}
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))

	// Under log.flush.policy=never the check is off.
	b = bytesHistory(2)
	b.h.FlushNever = true
	rep = check(t, &b.h)
	require.True(t, rep.OK(), "%v", rep.Summary(10))
}
