package replica_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// A replica reopened after a restart holds a log whose tail may never have been
// committed: it reached this node, but not every member of the ISR. As leader of a
// replicated partition it must not expose that tail until its followers hold it
// (Kafka reads the mark from a checkpoint; Sluice forgets it and learns it again).
// Leading alone, or serving an unassigned topic of a single node, its whole durable
// log is committed, as before.
func TestARestartedReplicaForgetsItsHighWatermarkInAReplicatedPartition(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	r := newReplica(t, log, cfg(true))
	r.Append(1000, plain("a", "b", "c", "d"))
	sync(t, r)
	require.EqualValues(t, 4, r.HighWatermark())

	// Restart: the same log, a new replica.
	led := newReplica(t, log, cfg(true))
	require.EqualValues(t, 4, led.HighWatermark(), "unassigned: the log end, as before")
	require.NoError(t, led.BecomeLeader(3))
	led.SetISR([]int32{2, 3})
	require.EqualValues(t, 0, led.HighWatermark(),
		"no follower reported yet: the tail is not known to be committed")
	led.FollowerReplicated(2, 2)
	led.FollowerReplicated(3, 3)
	require.EqualValues(t, 2, led.HighWatermark(), "the minimum over the ISR")

	alone := newReplica(t, log, cfg(true))
	require.NoError(t, alone.BecomeLeader(3))
	alone.SetISR(nil)
	require.EqualValues(t, 4, alone.HighWatermark(), "an ISR of one: all it holds durably")

	f := newReplica(t, log, cfg(true))
	f.BecomeFollower(3)
	require.EqualValues(t, 0, f.HighWatermark(), "a follower learns it from its leader")
	require.True(t, f.SetLeaderHighWatermark(3))
	require.EqualValues(t, 3, f.HighWatermark())
	f.BecomeFollower(4) // a new leader: what it learned stays
	require.EqualValues(t, 3, f.HighWatermark())
}
