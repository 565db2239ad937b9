package disk

import (
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/meta"
)

func stateStores(t *testing.T) map[string]func() StateStore {
	return map[string]func() StateStore{
		"mem": func() StateStore { return NewMemState() },
		"pebble": func() StateStore {
			s, err := OpenPebbleState(context.Background(), t.TempDir(), zap.NewNop())
			require.NoError(t, err)
			return s
		},
	}
}

func TestStateStoreContract(t *testing.T) {
	for name, open := range stateStores(t) {
		t.Run(name, func(t *testing.T) {
			s := open()
			defer func() { require.NoError(t, s.Close()) }()
			_, ok, err := s.Get([]byte("a"))
			require.NoError(t, err)
			require.False(t, ok)
			for _, k := range []string{"p/c", "p/a", "q/x", "p/b", "o"} {
				require.NoError(t, s.Set([]byte(k), []byte("v"+k)))
			}
			require.NoError(t, s.Set([]byte("p/b"), []byte("new")))
			v, ok, err := s.Get([]byte("p/b"))
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, "new", string(v))
			require.NoError(t, s.Delete([]byte("p/c")))
			require.NoError(t, s.Delete([]byte("missing")))

			var got []string
			require.NoError(t, s.Scan([]byte("p/"), func(k, v []byte) error {
				got = append(got, string(k)+"="+string(v))
				// Writing during a scan must not deadlock.
				return s.Set([]byte("z/"+string(k)), v)
			}))
			require.Equal(t, []string{"p/a=vp/a", "p/b=new"}, got)

			stop := fmt.Errorf("stop")
			require.ErrorIs(t, s.Scan(nil, func(_, _ []byte) error { return stop }), stop)
		})
	}
}

func TestPebbleStateSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenPebbleState(context.Background(), dir, zap.NewNop())
	require.NoError(t, err)
	require.NoError(t, s.Set([]byte("k"), []byte("v")))
	require.NoError(t, s.Close())
	s, err = OpenPebbleState(context.Background(), dir, zap.NewNop())
	require.NoError(t, err)
	defer s.Close()
	v, ok, err := s.Get([]byte("k"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "v", string(v))
}

func TestPrefixEnd(t *testing.T) {
	require.Equal(t, []byte("b"), prefixEnd([]byte("a")))
	require.Equal(t, []byte{'a', 1}, prefixEnd([]byte{'a', 0}))
	require.Equal(t, []byte("b"), prefixEnd([]byte{'a', 0xff}))
	require.Nil(t, prefixEnd([]byte{0xff, 0xff}))
}

func TestMemStateCloneIsIndependent(t *testing.T) {
	s := NewMemState()
	require.NoError(t, s.Set([]byte("a"), []byte("1")))
	c := s.Clone()
	require.NoError(t, s.Set([]byte("a"), []byte("2")))
	v, _, _ := c.Get([]byte("a"))
	require.Equal(t, "1", string(v))
}

func TestMetaLogAppendLoadInOrder(t *testing.T) {
	st := NewMemState()
	m, err := NewMetaLog(st)
	require.NoError(t, err)
	recs := []meta.Record{
		{Kind: meta.KindTopicCreated, Topic: "a", TopicID: [16]byte{1, 2}, Partitions: 3,
			ReplicationFactor: 1, Configs: []meta.Config{{Name: "retention.ms", Value: "10"}}},
		{Kind: meta.KindPartitionsAdded, Topic: "a", Partitions: 5},
		{Kind: meta.KindProducerIDBlock, NextProducerID: 1000},
	}
	for i, r := range recs[:2] {
		idx, err := m.Append(r)
		require.NoError(t, err)
		require.Equal(t, uint64(i+1), idx, "indexes start at 1")
	}
	// A reopened log continues the sequence.
	m, err = NewMetaLog(st)
	require.NoError(t, err)
	idx, err := m.Append(recs[2])
	require.NoError(t, err)
	require.Equal(t, uint64(3), idx)
	// Sequence 256 must sort after 255: big-endian keys keep commit order.
	for i := 0; i < 300; i++ {
		_, err := m.Append(meta.Record{Kind: meta.KindTopicDeleted, Topic: fmt.Sprint(i)})
		require.NoError(t, err)
	}
	got, err := m.Load()
	require.NoError(t, err)
	require.Zero(t, got.SnapshotIndex)
	require.Equal(t, recs, got.Records[:3])
	for i := 0; i < 300; i++ {
		require.Equal(t, fmt.Sprint(i), got.Records[3+i].Topic)
	}
}

// A snapshot replaces the records it covers; the log goes on after it, also reopened.
func TestMetaLogSnapshotThenReplay(t *testing.T) {
	st := NewMemState()
	m, err := NewMetaLog(st)
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		_, err := m.Append(meta.Record{Kind: meta.KindProducerIDBlock, NextProducerID: int64(i)})
		require.NoError(t, err)
	}
	image := []meta.Record{{Kind: meta.KindProducerIDBlock, NextProducerID: 2}}
	require.NoError(t, m.Snapshot(3, image))
	require.Error(t, m.Snapshot(9, image), "beyond the log")
	m, err = NewMetaLog(st)
	require.NoError(t, err)
	idx, err := m.Append(meta.Record{Kind: meta.KindProducerIDBlock, NextProducerID: 5})
	require.NoError(t, err)
	require.Equal(t, uint64(6), idx)
	got, err := m.Load()
	require.NoError(t, err)
	require.Equal(t, uint64(3), got.SnapshotIndex)
	require.Equal(t, image, got.Snapshot)
	require.Len(t, got.Records, 3)
	require.Equal(t, int64(3), got.Records[0].NextProducerID)
	// A snapshot of the whole log leaves no record; the next index still follows.
	require.NoError(t, m.Snapshot(6, image))
	m, err = NewMetaLog(st)
	require.NoError(t, err)
	require.Equal(t, uint64(6), m.LastIndex())
}

// Every acknowledged Set survives a crash that keeps only synced data: the StateStore's
// "durable on return" promise, checked on pebble's crashable in-memory filesystem.
func TestPebbleStateSetIsDurableOnReturn(t *testing.T) {
	mem := vfs.NewCrashableMem()
	s, err := OpenPebbleStateFS(context.Background(), mem, "state", zap.NewNop())
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		require.NoError(t, s.Set(fmt.Appendf(nil, "k%02d", i), []byte{byte(i)}))
	}
	require.NoError(t, s.Delete([]byte("k07")))
	crashed := mem.CrashClone(vfs.CrashCloneCfg{})
	require.NoError(t, s.Close())

	s, err = OpenPebbleStateFS(context.Background(), crashed, "state", zap.NewNop())
	require.NoError(t, err)
	defer s.Close()
	n := 0
	require.NoError(t, s.Scan([]byte("k"), func(k, v []byte) error {
		require.NotEqual(t, "k07", string(k))
		n++
		return nil
	}))
	require.Equal(t, 49, n)
}
