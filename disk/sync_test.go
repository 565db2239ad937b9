package disk

import (
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/replica"
)

// A Sync running on another goroutine while appends roll segments makes durable
// everything appended before it started, including segments sealed while it ran: after
// a crash the log ends at or after the end offset read before the last Sync that
// returned. Run with -race.
func TestPartitionLogConcurrentSyncCoversWhatPrecededIt(t *testing.T) {
	cfg := replica.SegmentConfig{SegmentBytes: 600, IndexInterval: 100}
	for seed := int64(0); seed < 60; seed++ {
		r := rand.New(rand.NewSource(seed))
		m, st := NewMemFS(), NewMemState()
		l := openTestLog(t, m, st, cfg)
		var durable atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				claim := l.EndOffset() // appended before this Sync starts
				if err := l.Sync(); err != nil {
					t.Error(err)
					return
				}
				durable.Store(max(durable.Load(), claim))
			}
		}()
		var written [][]byte
		for i, n := 0, 20+r.Intn(100); i < n; i++ {
			written = append(written, appendBatch(t, l, 1000, 1+r.Intn(3), r.Intn(120), int64(i)))
		}
		close(stop)
		wg.Wait()
		m.Crash(r)
		l = openTestLog(t, m, st, cfg)
		require.GreaterOrEqual(t, l.EndOffset(), durable.Load(), "seed %d", seed)
		got := readAll(t, l)
		for i := range got {
			require.Equal(t, written[i], got[i], "seed %d batch %d", seed, i)
		}
		require.NoError(t, l.Close())
	}
}
