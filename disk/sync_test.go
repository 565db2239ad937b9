package disk

import (
	"errors"
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

// Seed 1686: a Sync in flight (StartSync, as the simulator runs it) when a write finds
// that an eviction's fsync of the same segment failed. The write takes the log offline
// and drops every byte not durable before, the ones the in-flight fsync covers
// included, so that Sync must not report success when it finishes: the replica would
// acknowledge the dropped batches (an OffsetCommit answered, then gone after a crash).
func TestSyncInFlightWhenTheLogDropsUnsyncedBytesFails(t *testing.T) {
	m := NewMemFS()
	st := NewMemState()
	c := NewFileCache(m, 1)
	open := logOpener(t, st)
	a := open(c, "a-0")
	synced := appendBatch(t, a, 1000, 2, 30, 1)
	require.NoError(t, a.Sync())
	appendBatch(t, a, 1000, 1, 30, 2) // the batch the in-flight Sync covers
	var finish func() error
	fl := m.Fly(func() { finish = a.StartSync() })
	appendBatch(t, a, 1000, 1, 30, 3) // dirty again: the eviction fsyncs
	boom := errors.New("ENOSPC")
	m.SetFault(func(op Op, p string) error {
		if op == OpSync && p == "data/a-0/00000000000000000000.log" {
			return boom
		}
		return nil
	})
	b := open(c, "b-0") // evicts a's segment; its fsync fails
	m.SetFault(nil)
	h, batch4 := testBatch(a.EndOffset(), 1, 10, 4)
	require.ErrorIs(t, a.Append(1000, h, batch4), replica.ErrLogOffline)
	fl.Land()
	err := finish()
	require.ErrorIs(t, err, replica.ErrLogOffline,
		"the Sync covered bytes the log dropped while it was in flight")

	require.NoError(t, b.Close())
	require.Error(t, a.Close())
	m.Crash(rand.New(rand.NewSource(5)))
	a = open(NewFileCache(m, 1), "a-0")
	defer a.Close()
	require.EqualValues(t, 2, a.EndOffset(), "only the batch synced before survives")
	got, err := a.Read(0, 1<<20, a.EndOffset())
	require.NoError(t, err)
	require.Equal(t, synced, got)
}
