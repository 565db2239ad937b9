package disk

import (
	"errors"
	"math/rand"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/replica"
)

// keepRand is a CrashRand whose Intn always returns its value (capped at n-1).
type keepRand int

func (k keepRand) Intn(n int) int { return min(int(k), n-1) }
func (k keepRand) Int63() int64   { return int64(k) }

// failOnce fails the first call for op with err, then nothing.
func failOnce(s *MemState, op Op, err error) {
	done := false
	s.SetFault(func(o Op, _ string) error {
		if o != op || done {
			return nil
		}
		done = true
		return err
	})
}

// A write whose log write failed is not visible, refuses every later write, and is in
// doubt: a restart may keep it or lose it.
func TestMemStateFailedWriteIsInDoubt(t *testing.T) {
	for _, keep := range []int{0, 1} {
		s := NewMemState()
		require.NoError(t, s.Set([]byte("a"), []byte("1")))
		failOnce(s, OpWrite, syscall.EIO)
		err := s.Set([]byte("a"), []byte("2"))
		require.ErrorIs(t, err, syscall.EIO)
		v, _, _ := s.Get([]byte("a"))
		require.Equal(t, "1", string(v), "a failed log write is not applied")
		// Sticky: the store refuses writes until it restarts, as PebbleState does.
		require.ErrorIs(t, s.Set([]byte("b"), []byte("x")), syscall.EIO)
		require.ErrorIs(t, s.Delete([]byte("a")), syscall.EIO)
		require.Equal(t, 1, s.InDoubt(), "refused writes are not in doubt")

		s.Reopen(keepRand(keep))
		v, _, _ = s.Get([]byte("a"))
		require.Equal(t, map[int]string{0: "1", 1: "2"}[keep], string(v))
		_, ok, _ := s.Get([]byte("b"))
		require.False(t, ok)
		require.NoError(t, s.Set([]byte("b"), []byte("x")), "a restart clears the failure")
		require.Zero(t, s.InDoubt())
	}
}

// A write whose sync failed is visible until the restart, which may lose it.
func TestMemStateUnsyncedWriteVisibleUntilRestart(t *testing.T) {
	s := NewMemState()
	failOnce(s, OpSync, syscall.ENOSPC)
	require.ErrorIs(t, s.Delete([]byte("none")), syscall.ENOSPC)
	s = NewMemState()
	require.NoError(t, s.Set([]byte("k"), []byte("v")))
	failOnce(s, OpSync, syscall.ENOSPC)
	require.Error(t, s.Delete([]byte("k")))
	_, ok, _ := s.Get([]byte("k"))
	require.False(t, ok, "the delete reached the memtable before its sync failed")
	s.Reopen(keepRand(0))
	_, ok, _ = s.Get([]byte("k"))
	require.True(t, ok, "the unsynced delete was lost at the restart")
	var keys []string
	require.NoError(t, s.Scan(nil, func(k, _ []byte) error {
		keys = append(keys, string(k))
		return nil
	}))
	require.Equal(t, []string{"k"}, keys)
}

// Acknowledged writes survive every restart, whatever it draws; only the one write in
// doubt may go either way.
func TestMemStateAcknowledgedWritesSurviveRestarts(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	s := NewMemState()
	want := map[string]string{} // acknowledged state
	for i := 0; i < 3000; i++ {
		k := string(rune('a' + r.Intn(20)))
		if r.Intn(10) == 0 {
			failOnce(s, []Op{OpWrite, OpSync}[r.Intn(2)], syscall.EIO)
		}
		del := r.Intn(3) == 0
		var err error
		if del {
			err = s.Delete([]byte(k))
		} else {
			err = s.Set([]byte(k), []byte{'0' + byte(i%10)})
		}
		switch {
		case err == nil && del:
			delete(want, k)
		case err == nil:
			want[k] = string([]byte{'0' + byte(i%10)})
		}
		if err == nil && r.Intn(50) != 0 {
			continue
		}
		s.Reopen(r)
		s.SetFault(nil)
		got := map[string]string{}
		require.NoError(t, s.Scan(nil, func(k, v []byte) error {
			got[string(k)] = string(v)
			return nil
		}))
		if err != nil { // k's write was in doubt: take what the restart kept
			if v, ok := got[k]; ok {
				want[k] = v
			} else {
				delete(want, k)
			}
		}
		require.Equal(t, want, got, "step %d", i)
	}
}

// A topic deleted while the state store failed leaves its log behind; the re-created
// topic of the same name must not recover it.
func TestPartitionLogOfEarlierTopicIsRemoved(t *testing.T) {
	fsys, st := NewMemFS(), NewMemState()
	old := replica.SegmentConfig{TopicID: [16]byte{1}}
	l := openTestLog(t, fsys, st, old)
	appendBatch(t, l, 1000, 3, 10, 1000)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	failOnce(st, OpWrite, syscall.EIO)
	err := RemovePartitionLog(fsys, "data/t-0", st, "log/t-0/")
	require.True(t, errors.Is(err, syscall.EIO), "%v", err)
	st.Reopen(keepRand(0))

	l = openTestLog(t, fsys, st, old)
	require.EqualValues(t, 3, l.EndOffset(), "the same topic keeps its log")
	require.NoError(t, l.Close())
	l = openTestLog(t, fsys, st, replica.SegmentConfig{TopicID: [16]byte{2}})
	require.Zero(t, l.EndOffset(), "a re-created topic starts empty")
	appendBatch(t, l, 1000, 1, 10, 1000)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	l = openTestLog(t, fsys, st, replica.SegmentConfig{TopicID: [16]byte{2}})
	defer l.Close()
	require.EqualValues(t, 1, l.EndOffset())
}

// Opening a new log writes nothing to the state store (a synced write per partition
// made a 5,000-partition create take a minute); the first Sync with data stores the
// topic id binding, before the data it covers is claimed durable.
func TestNewLogBindsItsTopicAtTheFirstDataSync(t *testing.T) {
	fsys, st := NewMemFS(), NewMemState()
	cfg := replica.SegmentConfig{TopicID: [16]byte{7}}
	l := openTestLog(t, fsys, st, cfg)
	_, ok, err := st.Get(topicIDKey("log/t-0/"))
	require.NoError(t, err)
	require.False(t, ok, "the binding was written at open")
	require.NoError(t, l.Sync()) // nothing to make durable: still nothing written
	_, ok, _ = st.Get(topicIDKey("log/t-0/"))
	require.False(t, ok)
	appendBatch(t, l, 1000, 2, 10, 1000)
	require.NoError(t, l.Sync())
	v, ok, _ := st.Get(topicIDKey("log/t-0/"))
	require.True(t, ok, "the first data sync did not bind the log")
	require.Equal(t, cfg.TopicID[:], v)
	require.NoError(t, l.Close())
}
