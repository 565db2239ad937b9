package disk

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// Seed 39 of TestFailedFsyncThenRestartThenCrash (session-reader draws): a Sync's fsync
// failed while the process died before the Sync returned, so the log neither truncated
// nor tainted itself. The restarted process recovered the unwritten pages from the page
// cache, synced and acknowledged after them; the power loss zeroed them and recovery
// cut the log under the acknowledged batches. The fsync-in-flight mark makes the
// restart drop what that Sync had not made durable.
func TestAProcessDeadInAFailingFsyncLosesNothingAcknowledged(t *testing.T) {
	for _, marked := range []bool{true, false} {
		m, st, marks := NewMemFS(), NewMemState(), NewMemMarks()
		opts := LogOptions{}
		if marked {
			opts.Volatile = marks
		}
		open := func() *PartitionLog {
			l, err := OpenPartitionLogOpts(m, "data/t-0", st, "log/t-0/", smallSegments, 1000,
				zap.NewNop(), opts)
			require.NoError(t, err)
			return l
		}
		l := open()
		appendBatch(t, l, 1000, 1, 10, 1)
		require.NoError(t, l.Sync())
		appendBatch(t, l, 1000, 1, 10, 1)
		m.SetFault(func(op Op, _ string) error {
			if op == OpSync {
				return syscall.EIO
			}
			return nil
		})
		// The fsync is issued and fails; the process dies before the Sync returns
		// (StartSync's finish never runs).
		_ = l.StartSync()
		m.SetFault(nil)

		// Process restart: page cache kept.
		l = open()
		appendBatch(t, l, 1000, 2, 10, 1)
		require.NoError(t, l.Sync())
		acked := l.EndOffset()
		require.NoError(t, l.Close())

		m.Crash(zeroRand{})
		marks.Reboot()
		l = open()
		if marked {
			require.Equal(t, acked, l.EndOffset(), "every batch a Sync acknowledged survives")
			_, err := l.Read(0, 1<<20, l.EndOffset())
			require.NoError(t, err)
		} else {
			require.Less(t, l.EndOffset(), acked, "without the mark the restart built on "+
				"pages the failed fsync never wrote")
		}
		require.NoError(t, l.Close())
	}
}
