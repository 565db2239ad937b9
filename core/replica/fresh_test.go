package replica_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// A leader answers a follower from the batch it has just appended (fresh.go) only with
// exactly what a read of its log returns: at every batch boundary of its log, with any
// limit, ReadForFollower gives the log's bytes. Leadership moves back and forth between
// two replicas, each appending tails the other may never get, so a leader's log is cut
// and rewritten at offsets it once appended itself; the broker's ForgetFresh comes at
// the end of some steps only, as when the followers were woken.
func TestReadForFollowerIsWhatTheLogHolds(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := newPair(rt)
		leader, epoch := 0, int32(0)
		for term, terms := 0, rapid.IntRange(1, 6).Draw(rt, "terms"); term < terms; term++ {
			l, f := p.rs[leader], p.rs[1-leader]
			l.SetISR([]int32{int32(2 - leader)})
			for range rapid.IntRange(0, 4).Draw(rt, "appends") {
				vals := rapid.SliceOfN(rapid.StringN(1, 3, 3), 1, 3).Draw(rt, "vals")
				require.Zero(rt, l.Append(p.now, plain(vals...)).Err)
				requireReadsMatchLog(rt, l, p.logs[leader])
				if rapid.Bool().Draw(rt, "stepEnds") {
					l.ForgetFresh()
				}
			}
			p.syncAll(l)
			if rapid.Bool().Draw(rt, "replicate") {
				p.replicate(l, f, int32(2-leader), rapid.IntRange(1, 400).Draw(rt, "max"), 10_000)
			}
			epoch += int32(rapid.IntRange(1, 3).Draw(rt, "epochStep"))
			f.BecomeFollower(epoch)
			require.NoError(rt, f.BecomeLeader(epoch))
			l.BecomeFollower(epoch)
			leader = 1 - leader
			p.replicate(p.rs[leader], p.rs[1-leader], int32(2-leader), 1<<20, 10_000)
			requireReadsMatchLog(rt, p.rs[leader], p.logs[leader])
		}
	})
}

// requireReadsMatchLog reads r at every batch boundary of its log, with limits below,
// at and above the batch's size, and compares with the log's own read.
func requireReadsMatchLog(t *rapid.T, r *replica.Replica, log *replicatest.MemLog) {
	end := log.EndOffset()
	for _, b := range log.Batches() {
		h, err := batch.ParseHeader(b)
		require.NoError(t, err)
		if h.BaseOffset < log.StartOffset() {
			continue
		}
		for _, limit := range []int{1, len(b), 1 << 20} {
			want, err := log.Read(h.BaseOffset, limit, end)
			require.NoError(t, err)
			got := r.ReadForFollower(h.BaseOffset, limit)
			require.Zero(t, got.Err)
			require.Equal(t, want, got.Records, "read at %d, limit %d, log end %d",
				h.BaseOffset, limit, end)
		}
	}
}
