package replica_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/batch"

	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// pair is two replicas of one partition, each over its own log, driven by hand.
type pair struct {
	t    *rapid.T
	rs   [2]*replica.Replica
	logs [2]*replicatest.MemLog
	now  int64
}

// newPair is two fresh replicas of tp, each over its own MemLog, with log.flush.policy
// always; the first leads and the second follows, in epoch 0.
func newPair(rt *rapid.T) *pair {
	c := cfg(true)
	p := &pair{t: rt}
	for i := range p.rs {
		p.logs[i] = replicatest.NewMemLog(c.Segment)
		r, err := replica.New(tp, 1, p.logs[i], c, zap.NewNop())
		require.NoError(rt, err)
		p.rs[i] = r
	}
	p.rs[1].BecomeFollower(0)
	return p
}

// syncAll runs a sync cycle on r if it needs one.
func (p *pair) syncAll(r *replica.Replica) {
	if r.NeedsSync() {
		r.BeginSync()
		r.SyncCompleted(r.Log().Sync())
	}
}

// replicate runs the follower fetch loop of f (node id fid) against leader l until f
// has everything l has, with reads of at most maxBytes: the follower's position, the
// leader's check, a truncation when they diverge, else a read, an append, the leader's
// high-water mark and an fsync, as the broker will drive them. It returns the rounds.
func (p *pair) replicate(l, f *replica.Replica, fid int32, maxBytes int, maxRounds int) int {
	for round := 1; round <= maxRounds; round++ {
		p.now++
		off, lastEpoch, ok := f.FetchPosition()
		if !ok {
			p.syncAll(f)
			continue
		}
		ff := replica.FollowerFetch{Replica: fid, FetchOffset: off, LastFetchedEpoch: lastEpoch,
			CurrentLeaderEpoch: l.LeaderEpoch(), NowMs: p.now}
		chk := l.CheckFollowerFetch(ff)
		require.Zero(p.t, chk.Code, "round %d", round)
		if chk.Diverging {
			to, _ := f.TruncationFor(chk.DivergingEpoch, chk.DivergingEndOffset)
			_, err := f.TruncateTo(to)
			require.NoError(p.t, err)
			continue
		}
		l.FollowerFetched(ff)
		res := l.ReadForFollower(off, maxBytes)
		require.Zero(p.t, res.Err)
		if len(res.Records) == 0 {
			f.SetLeaderHighWatermark(res.HighWatermark)
			return round
		}
		_, err := f.AppendReplicated(p.now, res.Records)
		require.NoError(p.t, err)
		f.SetLeaderHighWatermark(res.HighWatermark)
		p.syncAll(f)
	}
	p.t.Fatalf("no convergence in %d rounds", maxRounds)
	return 0
}

// Two replicas that take turns leading, each appending a tail the other may not get
// before leadership moves (a leader dying with unreplicated batches), always end with
// byte-identical logs and the same epoch caches once the follower has caught up: the
// diverging-epoch check and TruncationFor cut exactly the tails the new leader lacks.
// What was below a high-water mark is never cut.
func TestFollowersConvergeOnTheirLeadersLog(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		p := newPair(rt)
		leader, epoch := 0, int32(0)
		var acked [][]byte // batches below a leader's high-water mark: never to be cut
		for term, terms := 0, rapid.IntRange(1, 6).Draw(rt, "terms"); term < terms; term++ {
			l, f := p.rs[leader], p.rs[1-leader]
			l.SetISR([]int32{int32(2 - leader)})
			for range rapid.IntRange(0, 4).Draw(rt, "appends") {
				vals := rapid.SliceOfN(rapid.StringN(1, 3, 3), 1, 3).Draw(rt, "vals")
				require.Zero(rt, l.Append(p.now, plain(vals...)).Err)
				if rapid.Bool().Draw(rt, "sync") {
					p.syncAll(l)
				}
			}
			p.syncAll(l)
			maxBytes := rapid.IntRange(1, 400).Draw(rt, "maxBytes")
			if rapid.Bool().Draw(rt, "replicate") {
				p.replicate(l, f, int32(2-leader), maxBytes, 10_000)
			}
			acked = below(rt, p.logs[leader].Batches(), l.HighWatermark())
			// Leadership moves to the follower, as after the leader's death.
			epoch += int32(rapid.IntRange(1, 3).Draw(rt, "epochStep"))
			f.BecomeFollower(epoch) // learns the epoch, then leads in it
			require.NoError(rt, f.BecomeLeader(epoch))
			l.BecomeFollower(epoch)
			leader = 1 - leader
			requirePrefix(rt, acked, p.logs[leader].Batches(),
				"the new leader holds every batch below the old one's high-water mark")
		}
		l, f := p.rs[leader], p.rs[1-leader]
		p.replicate(l, f, int32(2-leader), 1<<20, 10_000)
		require.Equal(rt, p.logs[leader].Batches(), p.logs[1-leader].Batches(),
			"byte-identical logs")
		require.Equal(rt, written(l), written(f),
			"the same epochs wrote the same batches (a leader's epoch with none yet aside)")
		requirePrefix(rt, acked, p.logs[1-leader].Batches(),
			"acknowledged batches survive every change")
	})
}

// below returns the batches of bs that end at or below hwm.
func below(t *rapid.T, bs [][]byte, hwm int64) [][]byte {
	var out [][]byte
	for _, b := range bs {
		h, err := batch.ParseHeader(b)
		require.NoError(t, err)
		if h.BaseOffset+int64(h.LastOffsetDelta)+1 <= hwm {
			out = append(out, b)
		}
	}
	return out
}

// written is r's epoch cache without the entries that start at its log end: an epoch
// that has written nothing yet, which only its leader knows of.
func written(r *replica.Replica) []replica.EpochEntry {
	var out []replica.EpochEntry
	for _, e := range r.LeaderEpochs() {
		if e.StartOffset < r.EndOffset() {
			out = append(out, e)
		}
	}
	return out
}

// requirePrefix checks that bs begins with prefix.
func requirePrefix(t *rapid.T, prefix, bs [][]byte, msg string) {
	require.GreaterOrEqual(t, len(bs), len(prefix), msg)
	for i := range prefix {
		require.Equal(t, prefix[i], bs[i], msg)
	}
}
