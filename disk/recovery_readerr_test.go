package disk

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/replica"
)

// TestRecoveryReadErrorNeverTruncates fails reads while a partition log recovers: the
// k-th read (or directory listing) only, or every one from the k-th on, for every k a
// fault-free recovery reaches. A read error is not corruption: recovery either fails
// (the partition stays offline) or recovers everything, and a later fault-free recovery
// always finds every synced batch.
func TestRecoveryReadErrorNeverTruncates(t *testing.T) {
	require.Empty(t, readErrorLosses(t), "recovery lost data after a read error")
}

// TestRecoveryReadErrorMutantIsCaught proves the test above can fail: a recovery that
// truncates at a read error loses synced batches.
func TestRecoveryReadErrorMutantIsCaught(t *testing.T) {
	mutantTruncateOnReadError = true
	defer func() { mutantTruncateOnReadError = false }()
	require.NotEmpty(t, readErrorLosses(t), "the mutant went unnoticed")
}

// readErrorLosses runs the read-fault scenarios and describes each that lost data.
func readErrorLosses(t *testing.T) []string {
	t.Helper()
	cfg := replica.SegmentConfig{SegmentBytes: 1500, IndexInterval: 200}
	var losses []string
	for seed := int64(0); seed < 12; seed++ {
		for _, clean := range []bool{true, false} {
			for _, sticky := range []bool{false, true} {
				losses = append(losses, readErrorScenario(t, cfg, seed, clean, sticky)...)
			}
		}
	}
	return losses
}

func readErrorScenario(t *testing.T, cfg replica.SegmentConfig, seed int64, clean,
	sticky bool) []string {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, cfg)
	var written [][]byte
	for i, n := 0, 5+r.Intn(30); i < n; i++ {
		written = append(written, appendBatch(t, l, 1000, 1+r.Intn(3), r.Intn(120), int64(i)))
	}
	require.NoError(t, l.Sync())
	if clean {
		require.NoError(t, l.Close()) // index files written: recovery trusts them
	} else {
		m.Crash(r) // everything synced; the indexes may be missing or stale
	}
	var losses []string
	for k := 1; ; k++ {
		reads, failed := 0, false
		m.SetFault(func(op Op, _ string) error {
			if op != OpRead && op != OpReadDir {
				return nil
			}
			reads++
			if reads == k || (sticky && reads > k) {
				failed = true
				return syscall.EIO
			}
			return nil
		})
		l, err := OpenPartitionLog(m, "data/t-0", st, "log/t-0/", cfg, 1000, zap.NewNop())
		m.SetFault(nil)
		if err == nil {
			if got := readAll(t, l); len(got) != len(written) {
				losses = append(losses, lossf(seed, clean, sticky, k, "open succeeded", len(got), len(written)))
			}
			require.NoError(t, l.Close())
		}
		l2 := openTestLog(t, m, st, cfg)
		got := readAll(t, l2)
		if len(got) != len(written) {
			losses = append(losses, lossf(seed, clean, sticky, k, "reopened", len(got), len(written)))
		} else {
			for i := range got {
				require.Equal(t, written[i], got[i], "seed %d batch %d", seed, i)
			}
		}
		require.NoError(t, l2.Close())
		if !failed {
			return losses // k is past every read recovery makes
		}
	}
}

func lossf(seed int64, clean, sticky bool, k int, what string, got, want int) string {
	return fmt.Sprintf("seed %d clean=%v sticky=%v read %d failed, %s: %d of %d batches",
		seed, clean, sticky, k, what, got, want)
}

// TestRemovalStoppedByReadErrorIsFinishedAtOpen: a removal that fails part way (the
// directory cannot be read) must not leave a log that a later open recovers: the
// deleted topic's records would become those of the next topic of the same name.
func TestRemovalStoppedByReadErrorIsFinishedAtOpen(t *testing.T) {
	cfg := replica.SegmentConfig{SegmentBytes: 1500, IndexInterval: 200}
	for _, failAt := range []Op{OpReadDir, OpRemove} {
		m, st := NewMemFS(), NewMemState()
		l := openTestLog(t, m, st, cfg)
		for i := 0; i < 20; i++ {
			appendBatch(t, l, 1000, 2, 50, int64(i))
		}
		require.NoError(t, l.Sync())
		require.NoError(t, l.Close())
		removes := 0
		m.SetFault(func(op Op, _ string) error {
			if op == OpRemove {
				removes++
			}
			if op == failAt && (op != OpRemove || removes == 2) {
				return syscall.EIO
			}
			return nil
		})
		require.Error(t, RemovePartitionLog(m, "data/t-0", st, "log/t-0/"))
		m.SetFault(nil)
		l = openTestLog(t, m, st, cfg)
		require.Equal(t, int64(0), l.EndOffset(), "fault at %v: the deleted log came back", failAt)
		require.Equal(t, int64(0), l.StartOffset())
		require.NoError(t, l.Close())
		_, marked, err := st.Get(removingKey("log/t-0/"))
		require.NoError(t, err)
		require.False(t, marked)
	}
}
