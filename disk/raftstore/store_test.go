package raftstore

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/disk"
)

func open(t *testing.T, fs vfs.FS) *disk.PebbleState {
	t.Helper()
	st, err := disk.OpenPebbleStateFS(context.Background(), fs, "state", zap.NewNop())
	require.NoError(t, err)
	return st
}

func entry(i, term uint64, data string) *raft.Log {
	return &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte(data),
		AppendedAt: time.Unix(1700000000, int64(i))}
}

func TestEmptyLogHasIndexesZero(t *testing.T) {
	st := open(t, vfs.NewMem())
	defer st.Close()
	s := New(st)
	first, err := s.FirstIndex()
	require.NoError(t, err)
	last, err := s.LastIndex()
	require.NoError(t, err)
	require.Zero(t, first)
	require.Zero(t, last)
	var l raft.Log
	require.ErrorIs(t, s.GetLog(1, &l), raft.ErrLogNotFound)
}

func TestLogsRoundTripAndDeleteRange(t *testing.T) {
	st := open(t, vfs.NewMem())
	defer st.Close()
	s := New(st)
	require.NoError(t, s.StoreLog(entry(1, 1, "a")))
	ext := &raft.Log{Index: 2, Term: 1, Type: raft.LogConfiguration, Data: []byte("cfg"),
		Extensions: []byte{1, 2}}
	require.NoError(t, s.StoreLogs([]*raft.Log{ext, entry(3, 2, ""), entry(4, 2, "d"),
		entry(5, 3, "e")}))
	// A value stored beside the log (the stable store) is not an entry.
	require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 3))

	var l raft.Log
	require.NoError(t, s.GetLog(1, &l))
	require.Equal(t, *entry(1, 1, "a"), l)
	require.NoError(t, s.GetLog(2, &l))
	require.Equal(t, *ext, l)
	require.NoError(t, s.GetLog(3, &l))
	require.Nil(t, l.Data, "an empty command reads back empty")
	require.Equal(t, uint64(2), l.Term)

	require.NoError(t, s.DeleteRange(1, 2)) // compaction drops the head
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	require.Equal(t, uint64(3), first)
	require.Equal(t, uint64(5), last)
	require.ErrorIs(t, s.GetLog(2, &l), raft.ErrLogNotFound)

	require.NoError(t, s.DeleteRange(5, math.MaxUint64)) // a conflicting tail goes
	last, _ = s.LastIndex()
	require.Equal(t, uint64(4), last)
	require.NoError(t, s.DeleteRange(7, 6), "an empty range is a no-op")
	require.NoError(t, s.DeleteRange(3, 4))
	first, _ = s.FirstIndex()
	last, _ = s.LastIndex()
	require.Zero(t, first)
	require.Zero(t, last)
	term, err := s.GetUint64([]byte("CurrentTerm"))
	require.NoError(t, err)
	require.Equal(t, uint64(3), term, "deleting the whole log leaves the stable store")
}

func TestStableGetOfAMissingKey(t *testing.T) {
	st := open(t, vfs.NewMem())
	defer st.Close()
	s := New(st)
	_, err := s.Get([]byte("LastVoteCand"))
	require.ErrorIs(t, err, ErrKeyNotFound)
	require.Equal(t, "not found", err.Error(), "hashicorp/raft matches this message")
	_, err = s.GetUint64([]byte("CurrentTerm"))
	require.ErrorIs(t, err, ErrKeyNotFound)
	require.NoError(t, s.Set([]byte("LastVoteCand"), []byte("2")))
	v, err := s.Get([]byte("LastVoteCand"))
	require.NoError(t, err)
	require.Equal(t, []byte("2"), v)
	require.NoError(t, s.Set([]byte("odd"), []byte{1}))
	_, err = s.GetUint64([]byte("odd"))
	require.Error(t, err, "a value that is not 8 bytes is not a number")
}

// TestWritesAreDurableOnReturn crashes the filesystem right after each write
// returned: only synced data survives a CrashClone, so everything must be there.
func TestWritesAreDurableOnReturn(t *testing.T) {
	fs := vfs.NewCrashableMem()
	st := open(t, fs)
	s := New(st)
	require.NoError(t, s.StoreLogs([]*raft.Log{entry(1, 1, "a"), entry(2, 1, "b")}))
	require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 7))
	require.NoError(t, s.Set([]byte("LastVoteCand"), []byte("3")))
	require.NoError(t, s.DeleteRange(1, 1))
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	require.NoError(t, st.Close())

	st = open(t, crashed)
	defer st.Close()
	s = New(st)
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	require.Equal(t, uint64(2), first)
	require.Equal(t, uint64(2), last)
	var l raft.Log
	require.NoError(t, s.GetLog(2, &l))
	require.Equal(t, []byte("b"), l.Data)
	term, err := s.GetUint64([]byte("CurrentTerm"))
	require.NoError(t, err)
	require.Equal(t, uint64(7), term)
	v, err := s.Get([]byte("LastVoteCand"))
	require.NoError(t, err)
	require.Equal(t, []byte("3"), v)
}

func TestCorruptEntryIsAnError(t *testing.T) {
	st := open(t, vfs.NewMem())
	defer st.Close()
	s := New(st)
	require.NoError(t, st.Set(logKey(1), []byte{encVersion, 1}))
	var l raft.Log
	err := s.GetLog(1, &l)
	require.Error(t, err)
	require.NotErrorIs(t, err, raft.ErrLogNotFound)
	b := encodeLog(entry(2, 1, "xyz"))
	require.NoError(t, st.Set(logKey(2), b[:len(b)-2]))
	require.Error(t, s.GetLog(2, &l), "a truncated data chunk")
}
