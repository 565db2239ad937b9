package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core"
)

// The loop's timer set against a model: whatever mix of adds, cancels and due calls,
// due returns exactly the live timers at or before now, in (time, id) order, and a
// cancelled timer neither fires nor stays in the heap.
func TestTimersMatchModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ts := newTimers()
		defer ts.stop()
		live := map[uint64]core.Time{}
		var now core.Time
		nextID := uint64(0)
		steps := rapid.IntRange(1, 200).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0:
				nextID++
				at := now + core.Time(rapid.Int64Range(0, 50).Draw(rt, "in"))
				ts.add(now, at, nextID)
				live[nextID] = at
			case 1:
				id := rapid.Uint64Range(0, nextID+1).Draw(rt, "cancel")
				ts.cancel(id)
				delete(live, id)
			case 2:
				now += core.Time(rapid.Int64Range(0, 30).Draw(rt, "advance"))
				got := ts.due(now, nil)
				var want []uint64
				for id, at := range live {
					if at <= now {
						want = append(want, id)
					}
				}
				require.ElementsMatch(rt, want, got)
				for i := 1; i < len(got); i++ {
					a, b := live[got[i-1]], live[got[i]]
					require.True(rt, a < b || a == b && got[i-1] < got[i],
						"due order: %d@%d before %d@%d", got[i-1], a, got[i], b)
				}
				for _, id := range got {
					delete(live, id)
				}
			}
			require.Equal(rt, len(live), ts.pending(), "heap holds exactly the live timers")
			require.Len(rt, ts.byID, len(live))
		}
	})
}
