package sim

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Cancelling events (a broker's CancelTimer, a crashed node's timers) takes exactly
// them out of the queue and leaves the others in (time, sequence) order, whatever the
// heap's layout after the removals.
func TestEventQueueRemoveKeepsOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var q eventQueue
		type ev struct {
			at  int64
			seq uint64
		}
		live := map[uint64]ev{} // by a: the event's id
		var keys [][2]uint64    // (a, key) in push order, so the draws replay
		n := rapid.IntRange(1, 100).Draw(rt, "n")
		for i := range n {
			at := rapid.Int64Range(0, 20).Draw(rt, "at")
			e := event{at: at, a: uint64(i)}
			if rapid.Bool().Draw(rt, "cancellable") {
				e.ckey = q.cancelKey()
				keys = append(keys, [2]uint64{uint64(i), e.ckey})
			}
			require.True(rt, q.push(e))
			live[uint64(i)] = ev{at: at, seq: q.nextSeq - 1}
		}
		for _, ak := range keys {
			if rapid.Bool().Draw(rt, "remove") {
				q.remove(ak[1])
				q.remove(ak[1]) // twice: the second finds nothing
				delete(live, ak[0])
			}
		}
		want := make([]uint64, 0, len(live))
		for a := range live {
			want = append(want, a)
		}
		sort.Slice(want, func(i, j int) bool {
			x, y := live[want[i]], live[want[j]]
			return x.at < y.at || x.at == y.at && x.seq < y.seq
		})
		got := []uint64{}
		for {
			e, ok := q.pop()
			if !ok {
				break
			}
			got = append(got, e.a)
		}
		require.Equal(rt, want, got)
		require.Empty(rt, q.pos, "no position kept for an event that left the queue")
	})
}
