package broker

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core"
)

// Property: a follower fetching three partitions in incremental sessions from two
// leader nodes ends with every partition's log equal to its leader's, whatever the
// leaders append, however partitions move between the two nodes (a new epoch, the new
// leader holding the old one's log), whichever requests fail, and whenever a leader
// loses its sessions (evicted from its cache, or restarted). Its high-water marks
// never go back.
func TestFollowerInSessionsConvergesOnTheLeadersLogs(t *testing.T) {
	lost, incremental := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t)
		h.mustCreate("t", 3)
		cfg := h.b.replicaConfig(h.b.image.Topic("t"))
		leaders := map[int32]*testLeader{2: newTestLeader(t, 2, cfg), 3: newTestLeader(t, 3, cfg)}
		for _, l := range leaders {
			l.sessions = newTestSessions()
		}
		owner, epoch := map[core.TopicPartition]int32{}, int32(1)
		var tps []core.TopicPartition
		for p := range int32(3) {
			tp := tp("t", p)
			tps = append(tps, tp)
			owner[tp] = 2 + p%2
			leaders[owner[tp]].lead(tp, 1, nil, 1)
			h.b.follow(tp, owner[tp], 1)
		}
		hwms := map[core.TopicPartition]int64{}
		steps := rapid.IntRange(1, 80).Draw(rt, "steps")
		for i := range steps {
			tp := tps[rapid.IntRange(0, 2).Draw(rt, "partition")]
			switch rapid.IntRange(0, 6).Draw(rt, "action") {
			case 0:
				leaders[owner[tp]].produce(tp, values(fmt.Sprint("r", i)))
			case 1, 2:
				for _, p := range h.takePeer() {
					if rapid.IntRange(0, 5).Draw(rt, "fail") == 0 {
						h.step(PeerReply{Node: p.Node, ID: p.ID, Err: errors.New("lost")})
						continue
					}
					h.step(PeerReply{Node: p.Node, ID: p.ID, Msg: leaders[p.Node].answer(p)})
				}
				h.settle()
			case 3:
				h.advance(backoff(h))
			case 4:
				from := owner[tp]
				to := 5 - from
				epoch++
				leaders[to].lead(tp, epoch, leaders[from].logs[tp].Batches(), 1)
				leaders[from].reps[tp].BecomeFollower(epoch)
				owner[tp] = to
				h.b.follow(tp, to, epoch)
			case 5:
				leaders[int32(rapid.IntRange(2, 3).Draw(rt, "node"))].sessions.evict()
			case 6:
				h.holdSyncs = !h.holdSyncs
				h.settle()
			}
			for _, tp := range tps {
				hwm := h.b.replicas[tp].HighWatermark()
				if hwm < hwms[tp] {
					rt.Fatalf("%s: follower hwm went back: %d after %d", tp, hwm, hwms[tp])
				}
				hwms[tp] = hwm
			}
		}
		h.holdSyncs = false
		h.settle()
		caughtUp := func() bool {
			for _, tp := range tps {
				rep, lead := h.b.replicas[tp], leaders[owner[tp]].reps[tp]
				end := lead.EndOffset()
				if rep.EndOffset() != end || rep.HighWatermark() != end ||
					lead.HighWatermark() != end {
					return false
				}
			}
			return true
		}
		for round := 0; !caughtUp(); round++ {
			if round == 100 {
				for _, tp := range tps {
					leader, phase, _ := h.b.following(tp)
					rt.Logf("%s: follows %d (%s), end %d hwm %d; leader end %d hwm %d", tp,
						leader, phase, h.b.replicas[tp].EndOffset(),
						h.b.replicas[tp].HighWatermark(), leaders[owner[tp]].reps[tp].EndOffset(),
						leaders[owner[tp]].reps[tp].HighWatermark())
				}
				rt.Fatalf("the follower did not catch up in 100 rounds")
			}
			// The test leaders answer at once; a real one holds a Fetch with nothing
			// new for replica.fetch.wait.max.ms, so time passes.
			h.serve(leaders)
			h.advance(time.Duration(h.cfg.Fetcher.WaitMaxMs) * time.Millisecond)
		}
		for _, tp := range tps {
			if !assertEqualBatches(leaders[owner[tp]].logs[tp].Batches(), h.followerBatches(tp)) {
				rt.Fatalf("%s: the follower's log is not its leader's", tp)
			}
		}
		for _, l := range leaders {
			lost += l.sessions.notFound
			for _, f := range l.fetches {
				if f.SessionEpoch > 0 {
					incremental++
				}
			}
		}
	})
	t.Logf("incremental fetches %d, fetches of a lost session %d", incremental, lost)
	require.Positive(t, incremental)
	require.Positive(t, lost, "the property never lost a session")
}

func assertEqualBatches(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
