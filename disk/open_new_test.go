package disk

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/replica"
)

// opLog records the operations a MemFS sees, by kind and path.
type opLog struct{ ops []string }

func recordOps(m *MemFS, fail func(op Op, path string) error) *opLog {
	r := &opLog{}
	m.SetFault(func(op Op, path string) error {
		r.ops = append(r.ops, op.String()+" "+path)
		if fail != nil {
			return fail(op, path)
		}
		return nil
	})
	return r
}

// A new partition's log opens without any fsync: its directory (Mkdir) and first
// segment (Create) are not durable until the first Sync, which makes the
// directory's entry durable before any segment (a Sync with no bytes to make durable,
// as a replica's at open, leaves it for later: an empty log lost is made again). A
// crash before that Sync loses the directory, and with it only bytes no Sync covered:
// the log reopens empty. A crash after it keeps what the Sync covered.
func TestNewLogDirectoryIsDurableFromTheFirstSync(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	require.NoError(t, m.MkdirAll("data"))
	ops := recordOps(m, nil)
	l := openTestLog(t, m, st, replica.SegmentConfig{})
	require.Equal(t, []string{"mkdir data/t-0", "readdir data/t-0",
		"create data/t-0/00000000000000000000.log"}, ops.ops, "no fsync at open")
	require.True(t, l.entryPending)
	require.NoError(t, l.Sync())
	require.True(t, l.entryPending, "a Sync with nothing to make durable synced the entry")
	appendBatch(t, l, 1000, 3, 10, 1)

	m.Crash(zeroRand{})
	_, err := m.ReadDir("data/t-0")
	require.ErrorIs(t, err, fs.ErrNotExist, "an unsynced new directory survived a crash")
	l = openTestLog(t, m, st, replica.SegmentConfig{})
	require.Zero(t, l.EndOffset())

	b := appendBatch(t, l, 1000, 3, 10, 1)
	ops.ops = nil
	require.NoError(t, l.Sync())
	require.Equal(t, "sync data/t-0", ops.ops[0], "the entry is synced before any segment")
	require.False(t, l.entryPending)
	ops.ops = nil
	appendBatch(t, l, 1000, 1, 10, 1)
	require.NoError(t, l.Sync())
	require.NotContains(t, ops.ops, "sync data/t-0", "the entry is synced once")

	m.Crash(zeroRand{})
	l = openTestLog(t, m, st, replica.SegmentConfig{})
	require.False(t, l.entryPending, "an existing directory is reopened through MkdirAll")
	require.EqualValues(t, 4, l.EndOffset())
	require.Equal(t, b, readAll(t, l)[0])
}

// A failed fsync of the new directory's entry is a failed Sync: the log goes offline and
// drops what it wrote, as after a failed segment fsync.
func TestNewLogFailedEntrySyncTakesTheLogOffline(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	require.NoError(t, m.MkdirAll("data"))
	l := openTestLog(t, m, st, replica.SegmentConfig{})
	appendBatch(t, l, 1000, 3, 10, 1)
	recordOps(m, func(op Op, path string) error {
		if op == OpSync && path == "data/t-0" {
			return errors.New("EIO")
		}
		return nil
	})
	err := l.Sync()
	require.ErrorIs(t, err, replica.ErrLogOffline)
	require.True(t, l.entryPending)
	size, err := m.Stat("data/t-0/00000000000000000000.log")
	require.NoError(t, err)
	require.Zero(t, size, "the unsynced bytes were not dropped")
}
