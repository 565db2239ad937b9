package broker

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/batch"
)

// Property: whatever the leaders append, however leadership moves (each new leader
// holding its predecessor's log up to some point at or past the high-water mark, the
// rest of the follower's copy divergent), and whichever requests fail, the follower's
// high-water mark never goes back, every batch below it is byte-identical to the
// current leader's, and once the faults stop its log becomes the leader's log.
func TestFollowerConvergesOnTheLeadersLog(t *testing.T) {
	truncated := 0 // runs in which the follower cut a divergent tail
	rapid.Check(t, func(rt *rapid.T) {
		h, cur, tp := followerSetup(t)
		cur.lead(tp, 1, nil, 1)
		leaders := map[int32]*testLeader{2: cur}
		epoch := int32(1)
		h.b.follow(tp, 2, 1)
		var lastHWM, committed, lastEnd int64
		cut := false
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := range steps {
			sent := len(h.env.peerReqs)
			switch rapid.IntRange(0, 5).Draw(rt, "action") {
			case 0:
				for j := range rapid.IntRange(1, 3).Draw(rt, "appends") {
					cur.produce(tp, values(fmt.Sprintf("r%d.%d", i, j)))
				}
			case 1, 2:
				for _, p := range h.takePeer() {
					if rapid.IntRange(0, 3).Draw(rt, "fail") == 0 {
						h.step(PeerReply{Node: p.Node, ID: p.ID, Err: errors.New("lost")})
						continue
					}
					h.step(PeerReply{Node: p.Node, ID: p.ID, Msg: leaders[p.Node].answer(p)})
				}
				h.settle()
			case 3:
				h.advance(backoff(h))
			case 4:
				epoch++
				node := 2 + epoch%3
				committed = max(committed, cur.reps[tp].HighWatermark())
				cur = newLeaderFrom(rt, h, cur, node, epoch, committed)
				leaders[node] = cur
				h.b.follow(tp, node, epoch)
			case 5:
				h.holdSyncs = !h.holdSyncs // fsyncs held: no fetch may go out (F2)
				h.settle()
			}
			for _, p := range h.env.peerReqs[min(sent, len(h.env.peerReqs)):] {
				f, ok := p.Msg.(*kmsg.FetchRequest)
				if !ok {
					continue
				}
				off := f.Topics[0].Partitions[0].FetchOffset
				if synced := h.env.logs[tp].Synced(); off > synced {
					rt.Fatalf("F2: fetch from %d with only %d fsynced", off, synced)
				}
			}
			rep := h.b.replicas[tp]
			if rep.EndOffset() < lastEnd {
				cut = true
			}
			lastEnd = rep.EndOffset()
			if rep.HighWatermark() < lastHWM {
				rt.Fatalf("follower hwm went back: %d after %d", rep.HighWatermark(), lastHWM)
			}
			lastHWM = rep.HighWatermark()
			checkPrefix(rt, h.followerBatches(tp), cur.logs[tp].Batches(), lastHWM)
		}
		h.holdSyncs = false
		h.catchUpWith(leaders, cur, tp, 100)
		require.Equal(t, cur.logs[tp].Batches(), h.followerBatches(tp))
		if cut {
			truncated++
		}
	})
	t.Logf("runs with a truncation: %d", truncated)
	require.Positive(t, truncated, "the property never exercised a divergent tail")
}

// newLeaderFrom elects node in epoch: it holds old's log up to a batch boundary at or
// past hwm (everything ever committed: it was in the ISR), and old steps down.
func newLeaderFrom(rt *rapid.T, h *harness, old *testLeader, node, epoch int32,
	hwm int64) *testLeader {
	tp := h.b.sortedPartitions()[0]
	bs := old.logs[tp].Batches()
	first := 0
	for first < len(bs) && batchEnd(bs[first]) <= hwm {
		first++
	}
	keep := rapid.IntRange(first, len(bs)).Draw(rt, "kept batches")
	nl := newTestLeader(h.t, node, old.cfg)
	nl.lead(tp, epoch, bs[:keep], 1)
	old.reps[tp].BecomeFollower(epoch)
	return nl
}

func batchEnd(b []byte) int64 {
	h, err := batch.ParseHeader(b)
	if err != nil {
		panic(err)
	}
	return h.NextOffset()
}

// checkPrefix fails unless the follower's batches below hwm are the leader's.
func checkPrefix(rt *rapid.T, follower, leader [][]byte, hwm int64) {
	for i, b := range follower {
		if batchEnd(b) > hwm {
			return
		}
		if i >= len(leader) || !bytes.Equal(b, leader[i]) {
			rt.Fatalf("follower batch %d (below hwm %d) differs from the leader's", i, hwm)
		}
	}
}
