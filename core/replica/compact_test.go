package replica_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// compacted is a replica of a compacted topic on a MemLog that rolls after every batch,
// so each append closes the segment before it; every batch has the same size.
func compacted(t *testing.T, c replica.CompactConfig) (*replica.Replica, replica.Config) {
	t.Helper()
	rc := cfg(true)
	rc.Compact = c
	log := replicatest.NewMemLog(rc.Segment)
	log.BatchesPerSegment = 1
	return newReplica(t, log, rc), rc
}

// appendKeyed appends one single-record batch per time in nowMs (the fake clock: the
// segment it opens is created then) and makes it all durable, so the high-water mark
// is the log end.
func appendKeyed(t *testing.T, r *replica.Replica, nowMs ...int64) {
	t.Helper()
	for _, now := range nowMs {
		b := batch.Build([]batch.KV{{Key: []byte("k"), Value: []byte("v")}},
			batch.NoProducer, now)
		require.Zero(t, r.Append(now, b).Err)
	}
	sync(t, r)
	require.Equal(t, r.Log().EndOffset(), r.HighWatermark())
}

// min.cleanable.dirty.ratio: the cleanable closed segments are cleaned only once their
// dirty share is past the ratio (Kafka cleans a log whose cleanable ratio is strictly
// greater than min.cleanable.dirty.ratio), and then from where the last clean ended to
// the end of the last closed segment.
func TestPlanCleanWaitsForTheDirtyRatio(t *testing.T) {
	r, _ := compacted(t, replica.CompactConfig{Enabled: true, MaxLagMs: math.MaxInt64,
		MinDirtyRatio: 0.5})
	appendKeyed(t, r, 1000, 1001, 1002, 1003, 1004) // closed [0]..[3], active [4]
	now := int64(1_000_000)

	_, ok := r.PlanClean(now, 3)
	require.False(t, ok, "1 dirty segment of 4 cleanable: 0.25")
	_, ok = r.PlanClean(now, 2)
	require.False(t, ok, "2 of 4: exactly the ratio, not past it")

	appendKeyed(t, r, 1005) // [4] closes: 3 dirty of 5
	req, ok := r.PlanClean(now, 2)
	require.True(t, ok, "3 of 5: 0.6 is past 0.5")
	require.EqualValues(t, 2, req.DirtyStart)
	require.EqualValues(t, 5, req.UpTo, "never the active segment [5]")
	require.Equal(t, now, req.NowMs)

	_, ok = r.PlanClean(now, 5)
	require.False(t, ok, "nothing dirty after a clean to the active segment")
	req, ok = r.PlanClean(now, 0)
	require.True(t, ok, "a first clean (nothing cleaned yet) is all dirty")
	require.EqualValues(t, 0, req.DirtyStart)
}

// A ratio of 1 never starts a clean on its own: the dirty share cannot be past it.
func TestPlanCleanRatioOneWaitsForever(t *testing.T) {
	r, _ := compacted(t, replica.CompactConfig{Enabled: true, MaxLagMs: math.MaxInt64,
		MinDirtyRatio: 1})
	appendKeyed(t, r, 1000, 1001, 1002)
	_, ok := r.PlanClean(1<<40, 0)
	require.False(t, ok)
}

// max.compaction.lag.ms: a partition whose dirty share is below the ratio is cleaned
// anyway once a dirty segment's first record was appended longer ago than the lag
// (strictly longer, as Kafka), and not before; a clean segment that old does not count.
func TestPlanCleanMaxCompactionLagOverridesTheRatio(t *testing.T) {
	r, rc := compacted(t, replica.CompactConfig{Enabled: true, MaxLagMs: 60_000,
		MinDirtyRatio: 0.9})
	// [0] and [1] at 1 s (cleaned before, dirtyStart 2); [2] at 10 s is the oldest
	// dirty one, [3] at 20 s; [4] active.
	appendKeyed(t, r, 1_000, 1_000, 10_000, 20_000, 30_000)

	_, ok := r.PlanClean(70_000, 2)
	require.False(t, ok, "[2] is exactly 60 s old: not older than the lag; 2 of 4 < 0.9")
	req, ok := r.PlanClean(70_001, 2)
	require.True(t, ok, "[2] is older than max.compaction.lag.ms")
	require.EqualValues(t, 2, req.DirtyStart)
	require.EqualValues(t, 4, req.UpTo)

	_, ok = r.PlanClean(70_001, 3)
	require.False(t, ok, "[0]..[2] clean, [3] only 50 s old, 1 of 4 dirty")

	// The default (2^63-1) never forces a clean.
	rc.Compact.MaxLagMs = math.MaxInt64
	r.Configure(rc)
	_, ok = r.PlanClean(1<<50, 2)
	require.False(t, ok)
}

// min.compaction.lag.ms holds back a segment with a record younger than the lag, and
// everything after it, whatever max.compaction.lag.ms says.
func TestPlanCleanMinLagHoldsBackOverdueSegments(t *testing.T) {
	r, _ := compacted(t, replica.CompactConfig{Enabled: true, MinLagMs: 50_000,
		MaxLagMs: 1_000, MinDirtyRatio: 0})
	appendKeyed(t, r, 1_000, 40_000, 45_000) // closed [0], [1]; active [2]
	req, ok := r.PlanClean(60_000, 0)
	require.True(t, ok)
	require.EqualValues(t, 1, req.UpTo, "[1]'s record is 20 s old, under the 50 s lag")
	_, ok = r.PlanClean(60_000, 1)
	require.False(t, ok, "only [1] is dirty and it is too young")
	req, ok = r.PlanClean(90_000, 1)
	require.True(t, ok)
	require.EqualValues(t, 2, req.UpTo)
}
