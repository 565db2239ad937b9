package disk

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// Acknowledged node-state writes survive a power loss at any moment, including while
// other writers are committing (pebble's group commit shares one fsync among them).
// The crash keeps what was synced and a random part of what was not (pebble's
// crashable filesystem). Every write that returned nil before the crash must be there
// after the reopen; a store whose writes do not sync (the disk/state-nosync mutant)
// fails this.
func TestPebbleStateAckedWritesSurviveCrash(t *testing.T) {
	const writers, rounds = 4, 6
	rng := rand.New(rand.NewPCG(1, 7))
	mem := vfs.NewCrashableMem()
	acked := make([]int, writers) // per writer: keys 0..acked-1 acknowledged so far
	for round := 0; round < rounds; round++ {
		s, err := OpenPebbleStateFS(context.Background(), mem, "state", zap.NewNop())
		require.NoError(t, err)
		requireAcked(t, s, acked, round)
		done := make([]atomic.Int64, writers)
		var stop, failed atomic.Bool
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int, from int) {
				defer wg.Done()
				for i := from; !stop.Load(); i++ {
					// A key set, and a key set and deleted: a lost delete would bring it back.
					if s.Set(stateKey(w, i), fmt.Appendf(nil, "%d", i)) != nil ||
						s.Set(tmpKey(w, i), []byte("x")) != nil || s.Delete(tmpKey(w, i)) != nil {
						failed.Store(true)
						return
					}
					done[w].Store(int64(i + 1))
				}
			}(w, acked[w])
		}
		// Crash once every writer has a few new acknowledged writes.
		for w := range done {
			for done[w].Load() < int64(acked[w]+20) && !failed.Load() {
				runtime.Gosched()
			}
		}
		require.False(t, failed.Load(), "a write failed")
		for w := range acked {
			acked[w] = int(done[w].Load()) // acknowledged before the crash
		}
		crashed := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(60), RNG: rng})
		stop.Store(true)
		wg.Wait()
		require.NoError(t, s.Close())
		mem = crashed
	}
	s, err := OpenPebbleStateFS(context.Background(), mem, "state", zap.NewNop())
	require.NoError(t, err)
	defer s.Close()
	requireAcked(t, s, acked, rounds)
}

func stateKey(w, i int) []byte { return fmt.Appendf(nil, "w%d/%08d", w, i) }
func tmpKey(w, i int) []byte   { return fmt.Appendf(nil, "tmp%d/%08d", w, i) }

// requireAcked checks that every acknowledged key is present with its value and that
// no acknowledged delete was undone.
func requireAcked(t *testing.T, s StateStore, acked []int, round int) {
	t.Helper()
	for w, n := range acked {
		for i := 0; i < n; i++ {
			v, ok, err := s.Get(stateKey(w, i))
			require.NoError(t, err)
			require.True(t, ok, "round %d: acknowledged key %s lost in a crash", round,
				stateKey(w, i))
			require.Equal(t, fmt.Sprint(i), string(v))
			_, ok, err = s.Get(tmpKey(w, i))
			require.NoError(t, err)
			require.False(t, ok, "round %d: acknowledged delete of %s undone by a crash",
				round, tmpKey(w, i))
		}
	}
}
