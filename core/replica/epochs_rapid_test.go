package replica

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// epochModel is the naive truth the cache must agree with: the epoch of every offset
// in [start, end).
type epochModel struct {
	start int64
	epoch []int32 // epoch[i] is the epoch of offset start+i
}

func (m *epochModel) end() int64 { return m.start + int64(len(m.epoch)) }

// answer is OffsetForLeaderEpoch computed from every offset: an epoch older than the
// latest ends where the first offset of a newer epoch is (the end, if only the latest,
// which has written nothing yet, is newer), and is answered with the largest epoch not
// newer than it that wrote below that point (itself if none did).
func (m *epochModel) answer(e int32, latest int32, haveLatest bool) (int32, int64) {
	if !haveLatest || e < 0 || e > latest {
		return -1, -1
	}
	if e == latest {
		return e, m.end()
	}
	next := m.end()
	for i, x := range m.epoch {
		if x > e {
			next = m.start + int64(i)
			break
		}
	}
	best := int32(-1)
	for i, x := range m.epoch {
		if m.start+int64(i) < next && x <= e && x > best {
			best = x
		}
	}
	if best < 0 {
		return e, next
	}
	return best, next
}

// Appends of batches in non-decreasing epochs, leadership changes at the log end,
// truncations from the end and from the start: the cache answers every epoch as the
// offset-by-offset model does, survives encoding, and keeps R8.
func TestEpochCacheMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var c epochCache
		m := &epochModel{}
		cur := int32(0)
		latest, haveLatest := int32(0), false
		lead := func() {
			c.assign(cur, m.end())
			latest, haveLatest = cur, true
		}
		lead()
		for range rapid.IntRange(1, 60).Draw(rt, "steps") {
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0: // a batch
				n := rapid.IntRange(1, 4).Draw(rt, "records")
				for range n {
					m.epoch = append(m.epoch, cur)
				}
			case 1: // a new leader epoch begins at the end
				cur += int32(rapid.IntRange(1, 3).Draw(rt, "bump"))
				lead()
			case 2: // truncate from the end
				end := rapid.Int64Range(m.start, m.end()).Draw(rt, "cutTo")
				m.epoch = m.epoch[:end-m.start]
				c.truncateFromEnd(end)
				l, ok := c.latest()
				latest, haveLatest = l.Epoch, ok
				if !ok || l.Epoch != cur {
					lead() // the leader appends in its own epoch again
				}
			case 3: // retention or DeleteRecords
				start := rapid.Int64Range(m.start, m.end()).Draw(rt, "startTo")
				m.epoch = m.epoch[start-m.start:]
				m.start = start
				c.truncateFromStart(start)
			}
			dec, err := decodeEpochCache(c.encode())
			require.NoError(rt, err)
			require.Equal(rt, c.entries, dec.entries)
			for i := 1; i < len(c.entries); i++ {
				require.Greater(rt, c.entries[i].Epoch, c.entries[i-1].Epoch)
				require.GreaterOrEqual(rt, c.entries[i].StartOffset, c.entries[i-1].StartOffset)
			}
			for e := int32(-1); e <= cur+1; e++ {
				ge, go_ := c.endOffsetFor(e, m.end())
				we, wo := m.answer(e, latest, haveLatest)
				require.Equal(rt, [2]int64{int64(we), wo}, [2]int64{int64(ge), go_},
					"epoch %d over %v from %d, cache %v", e, m.epoch, m.start, c.entries)
			}
		}
	})
}
