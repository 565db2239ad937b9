package replica_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// twoEpochLeader leads with offsets 0-1 written in epoch 0 and 2-3 in epoch 3.
func twoEpochLeader(t *testing.T) *replica.Replica {
	t.Helper()
	c := cfg(false)
	r := newReplica(t, replicatest.NewMemLog(c.Segment), c)
	require.Zero(t, r.Append(1000, plain("a", "b")).Err)
	require.NoError(t, r.BecomeLeader(3))
	require.Zero(t, r.Append(1000, plain("c", "d")).Err)
	require.Equal(t, []replica.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 2}},
		r.LeaderEpochs())
	return r
}

// A follower's fetch is checked against the leader's log as Kafka's leader checks it:
// its idea of the leader's epoch, then whether its last epoch ends where its log does
// here (else it must truncate to the end given), then the offset's range.
func TestFollowerFetchIsCheckedAgainstTheLeadersLog(t *testing.T) {
	r := twoEpochLeader(t)
	check := func(fetchOffset int64, lastEpoch, current int32) replica.FollowerCheck {
		return r.CheckFollowerFetch(replica.FollowerFetch{Replica: 2, FetchOffset: fetchOffset,
			LastFetchedEpoch: lastEpoch, CurrentLeaderEpoch: current, NowMs: 1})
	}
	require.Equal(t, replica.FollowerCheck{}, check(4, 3, 3), "in step with the leader")
	require.Equal(t, replica.FollowerCheck{}, check(2, 0, 3), "all of epoch 0, nothing more")
	require.Equal(t, replica.FollowerCheck{}, check(0, -1, -1), "an empty follower")

	require.Equal(t, replica.FollowerCheck{Diverging: true, DivergingEpoch: 0,
		DivergingEndOffset: 2}, check(3, 0, 3), "a tail of epoch 0 the leader never had")
	require.Equal(t, replica.FollowerCheck{Diverging: true, DivergingEpoch: 0,
		DivergingEndOffset: 2}, check(3, 2, 3), "an epoch the leader never had")
	require.Equal(t, kerr.OffsetOutOfRange.Code, check(3, 5, 3).Code, "an epoch from the future")

	require.Equal(t, kerr.FencedLeaderEpoch.Code, check(4, 3, 2).Code, "it follows an old leader")
	require.Equal(t, kerr.UnknownLeaderEpoch.Code, check(4, 3, 4).Code, "it knows a newer one")
	require.Equal(t, kerr.OffsetOutOfRange.Code, check(9, -1, 3).Code, "past the log end")

	r.BecomeFollower(4)
	require.Equal(t, kerr.NotLeaderForPartition.Code, check(4, 3, 4).Code)
}

// A follower stays in sync while it keeps reaching the leader's end, or the end the
// leader had at its previous fetch (one fetch behind a busy leader); one that fetches
// but never catches up for replica.lag.time.max.ms is out of sync, as is one that stops
// fetching while the leader's log grows; one whose log ends where the leader's does
// never is.
func TestOutOfSyncFollowersFollowKafkasCaughtUpRule(t *testing.T) {
	const lagMax = 30_000
	c := cfg(false)
	r := newReplica(t, replicatest.NewMemLog(c.Segment), c)
	r.SetISR([]int32{2, 3, 4})
	r.ResetFollowers([]int32{2, 3, 4}, 0)
	require.Empty(t, r.OutOfSyncReplicas(lagMax, lagMax))

	fetch := func(id int32, offset, now int64) {
		f := replica.FollowerFetch{Replica: id, FetchOffset: offset, LastFetchedEpoch: -1,
			CurrentLeaderEpoch: -1, NowMs: now}
		require.Zero(t, r.CheckFollowerFetch(f).Code)
		r.FollowerFetched(f)
	}
	for now := int64(1000); now <= 60_000; now += 1000 {
		before := r.EndOffset()
		require.Zero(t, r.Append(now, plain("x")).Err)
		fetch(2, before, now) // always one append behind: the leader's end at its last fetch
		if now <= 10_000 {
			fetch(3, 0, now) // fetches, never gets anywhere after 10 s
		}
		// 4 never fetches
	}
	require.Equal(t, []int32{3, 4}, r.OutOfSyncReplicas(60_000, lagMax),
		"2, one fetch behind, is in sync; 3 and 4 last caught up at the reset")
	require.Empty(t, r.OutOfSyncReplicas(30_000, lagMax), "within the lag of the reset")
	require.Equal(t, []int32{3, 4}, r.OutOfSyncReplicas(30_001, lagMax))

	fetch(3, r.EndOffset(), 61_000)
	require.Equal(t, []int32{4}, r.OutOfSyncReplicas(61_000, lagMax), "3 caught up again")
	require.Equal(t, []int32{2, 4}, r.OutOfSyncReplicas(200_000, lagMax),
		"2 stopped fetching one append behind")
	fetch(2, r.EndOffset(), 61_000)
	r.FollowerReplicated(4, r.EndOffset())
	require.Empty(t, r.OutOfSyncReplicas(200_000, lagMax),
		"idle followers whose logs end where the leader's does stay")
}

// A follower outside the ISR may join once it holds the log up to the high-water mark
// and up to the start of the leader's epoch.
func TestCaughtUpReplicasMayJoinTheISR(t *testing.T) {
	r := twoEpochLeader(t)
	r.SetISR([]int32{2})
	r.FollowerReplicated(2, 4)
	require.EqualValues(t, 4, r.HighWatermark())
	require.Empty(t, r.CaughtUpReplicas([]int32{2, 3}), "3 has reported nothing")
	r.FollowerReplicated(3, 2)
	require.Empty(t, r.CaughtUpReplicas([]int32{2, 3}), "3 is below the high-water mark")
	r.FollowerReplicated(3, 4)
	require.Equal(t, []int32{3}, r.CaughtUpReplicas([]int32{2, 3}))
}

// Reaching the high-water mark is not enough while it is below the start of the
// leader's epoch: the follower may hold an older leader's tail this leader cut.
func TestCaughtUpReplicasHoldTheLeadersEpochStart(t *testing.T) {
	c := cfg(false)
	r := newReplica(t, replicatest.NewMemLog(c.Segment), c)
	r.SetISR([]int32{2}) // 2 replicates nothing: the high-water mark stays at 0
	require.Zero(t, r.Append(1000, plain("a", "b")).Err)
	require.NoError(t, r.BecomeLeader(3))
	require.Zero(t, r.Append(1000, plain("c", "d")).Err)
	require.EqualValues(t, 0, r.HighWatermark())
	r.FollowerReplicated(3, 1)
	require.Empty(t, r.CaughtUpReplicas([]int32{3}), "below epoch 3's start at 2")
	r.FollowerReplicated(3, 2)
	require.Equal(t, []int32{3}, r.CaughtUpReplicas([]int32{3}))
}
