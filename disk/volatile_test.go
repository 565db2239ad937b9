package disk

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// Seed 119 (sessions-era draws): recovery's own fsync failed during a disk-error spell
// and the state store refused the taint mark too. The node said "reboot before
// restarting", but a process restart followed; it recovered the unwritten pages from
// the page cache, appended and acknowledged after them, and the next power loss turned
// them into zeros under acknowledged batches. The mark now also goes to tmpfs
// (VolatileMarks), which the data disk's faults do not reach and a process restart
// keeps.
func TestTaintSurvivesAFailingStateStoreThroughVolatileMarks(t *testing.T) {
	for _, withMarks := range []bool{true, false} {
		m, st, marks := NewMemFS(), NewMemState(), NewMemMarks()
		opts := LogOptions{}
		if withMarks {
			opts.Volatile = marks
		}
		open := func() (*PartitionLog, error) {
			return OpenPartitionLogOpts(m, "data/t-0", st, "log/t-0/", smallSegments, 1000,
				zap.NewNop(), opts)
		}
		l, err := open()
		require.NoError(t, err)
		appendBatch(t, l, 1000, 1, 10, 1)
		require.NoError(t, l.Sync())
		appendBatch(t, l, 1000, 1, 10, 1) // in the page cache only; the process dies

		// The restart's recovery fsync fails, and so does every state store write.
		m.SetFault(func(op Op, _ string) error {
			if op == OpSync {
				return syscall.EIO
			}
			return nil
		})
		st.SetFault(func(Op, string) error { return syscall.EIO })
		_, err = open()
		require.Error(t, err, "recovery cannot tell what is on disk")
		m.SetFault(nil)
		st.SetFault(nil)
		st.Reopen(zeroRand{})

		// A process restart, not a reboot: the page cache still holds the lost pages.
		l, err = open()
		require.NoError(t, err)
		end := l.EndOffset()
		appendBatch(t, l, 1000, 2, 10, 1)
		require.NoError(t, l.Sync()) // acknowledged
		acked := l.EndOffset()
		require.NoError(t, l.Close())

		m.Crash(zeroRand{})
		marks.Reboot()
		l, err = open()
		require.NoError(t, err)
		if withMarks {
			require.Equal(t, acked, l.EndOffset(), "every acknowledged batch survives")
		} else {
			// Without the marks nothing remembered the hazard: the batch whose pages were
			// lost leaves a hole, and recovery cuts the log there.
			require.Less(t, l.EndOffset(), acked, "the old behaviour loses acknowledged data")
			require.Equal(t, int64(1), l.EndOffset(), "cut at the lost pages (end was %d)", end)
		}
		_, err = l.Read(0, 1<<20, l.EndOffset())
		require.NoError(t, err)
		require.NoError(t, l.Close())
	}
}
