package raftmeta

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

func TestParseVoters(t *testing.T) {
	v, err := ParseVoters("1@127.0.0.1:9093, 2@host:9094,3@[::1]:9095")
	require.NoError(t, err)
	require.Equal(t, []Voter{{1, "127.0.0.1:9093"}, {2, "host:9094"}, {3, "[::1]:9095"}}, v)
	for _, bad := range []string{"", "1", "x@h:1", "-1@h:1", "1@nohost", "1@h:1,1@h:2",
		"1@h:1,2@h:1"} {
		_, err := ParseVoters(bad)
		require.Error(t, err, bad)
	}
}

func TestConfigNeedsAVoterOrAnAddress(t *testing.T) {
	cfg := Config{NodeID: 4, Voters: []Voter{{1, "127.0.0.1:1"}}, SnapshotDir: "x"}
	err := cfg.check()
	require.ErrorContains(t, err, "node 4 is not one of the voters")
	require.ErrorContains(t, err, "no state store")
	cfg.Addr = "127.0.0.1:2" // a non-voter with its own address
	require.NotContains(t, cfg.check().Error(), "voters")
	cfg = Config{NodeID: 1, Voters: []Voter{{1, "127.0.0.1:1"}}}
	_ = cfg.check()
	require.Equal(t, "127.0.0.1:1", cfg.Addr, "a voter's address is its voter address")
}

func TestOutcomeOfRaftErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want broker.MetaOutcome
	}{
		{nil, broker.MetaCommitted},
		{raft.ErrNotLeader, broker.MetaNotLeader},
		{raft.ErrLeadershipTransferInProgress, broker.MetaNotLeader},
		{raft.ErrEnqueueTimeout, broker.MetaRejected},
		{raft.ErrLeadershipLost, broker.MetaUnknown},
		{raft.ErrAbortedByRestore, broker.MetaUnknown},
		{raft.ErrRaftShutdown, broker.MetaUnknown},
		{syscall.EIO, broker.MetaUnknown}, // a store write in doubt
	} {
		got, _ := outcomeOf(c.err)
		require.Equal(t, c.want, got, "%v", c.err)
	}
}

func TestHCLogLinesReachZapAtTheirLevel(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	// The node's logger adds stack traces to errors (cmd/sluice); a raft line's would be
	// the adapter's own stack, 8 lines of noise per failed heartbeat to a dead peer.
	hl := newHCLog(zap.New(core, zap.AddStacktrace(zap.ErrorLevel)))
	hl.Info("entering follower state", "follower", "x")
	hl.Warn("heartbeat timeout reached")
	hl.Named("transport").Error("failed to accept", "error", "boom")
	hl.Debug("votes")
	got := logs.AllUntimed()
	require.Len(t, got, 4)
	require.Equal(t, zapcore.InfoLevel, got[0].Level)
	require.Contains(t, got[0].Message, "entering follower state")
	require.Contains(t, got[0].Message, "follower=x")
	require.Equal(t, zapcore.WarnLevel, got[1].Level)
	require.Equal(t, zapcore.ErrorLevel, got[2].Level)
	require.Empty(t, got[2].Stack, "no stack trace on raft's lines")
	require.Contains(t, got[2].Message, "raft.transport")
	require.Equal(t, zapcore.DebugLevel, got[3].Level)
	require.NotContains(t, got[0].Message, "[INFO]")
}

// recorder collects what an outbox delivers.
type recorder struct{ ins []broker.Input }

func (r *recorder) deliver(in broker.Input) bool { r.ins = append(r.ins, in); return true }

func command(t *testing.T, i uint64, rec meta.Record) *raft.Log {
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	return &raft.Log{Index: i, Type: raft.LogCommand, Data: data}
}

func testFSM(delivered uint64) (*fsm, *recorder, *[]error, *[][2]uint64) {
	rec := &recorder{}
	var fatals []error
	var marks [][2]uint64
	f := newFSM(zap.NewNop(), delivered)
	f.out = newOutbox(rec.deliver)
	f.fatal = func(err error) { fatals = append(fatals, err) }
	f.mark = func(ri, d uint64) error { marks = append(marks, [2]uint64{ri, d}); return nil }
	return f, rec, &fatals, &marks
}

// TestFSMIndexIsDenseAndSkipsWhatStartHeld: configuration and no-op entries take no
// index; records Start held (at or below delivered) are applied without a
// MetaApplied; the marker is written before each batch's first fresh MetaApplied.
func TestFSMIndexIsDenseAndSkipsWhatStartHeld(t *testing.T) {
	f, rec, fatals, marks := testFSM(1)
	a := meta.Record{Kind: meta.KindTopicCreated, Topic: "a", Partitions: 1}
	b := meta.Record{Kind: meta.KindTopicCreated, Topic: "b", Partitions: 2}
	resps := f.ApplyBatch([]*raft.Log{
		{Index: 1, Type: raft.LogConfiguration}, command(t, 2, a),
		{Index: 3, Type: raft.LogNoop}, command(t, 4, b),
	})
	require.Equal(t, []any{nil, uint64(1), nil, uint64(2)}, resps)
	require.Equal(t, []broker.Input{broker.MetaApplied{Index: 2, Record: b}}, rec.ins)
	require.Equal(t, [][2]uint64{{4, 2}}, *marks)
	require.Empty(t, *fatals)

	// A snapshot of this image restores the same image at the same index.
	snap, err := f.Snapshot()
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, json.NewEncoder(&buf).Encode(snap.(*fsmSnapshot).snap))
	g, _, fatals2, _ := testFSM(2)
	require.NoError(t, g.Restore(io.NopCloser(&buf)))
	require.Empty(t, *fatals2)
	require.Equal(t, uint64(2), g.dense)
	require.True(t, g.image.Equal(f.image))
}

// TestFSMEndsTheIncarnationOnASnapshotPastWhatItDelivered: a leader installed a
// snapshot that skips records this node was never told about; the port cannot say so,
// so the incarnation ends, and committed proposals are answered Unknown.
func TestFSMEndsTheIncarnationOnASnapshotPastWhatItDelivered(t *testing.T) {
	f, rec, fatals, _ := testFSM(1)
	s := snapshotFile{Version: snapshotVersion, Index: 5,
		Records: []meta.Record{{Kind: meta.KindTopicCreated, Topic: "a", Partitions: 1}}}
	b, _ := json.Marshal(s)
	require.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(b))))
	require.Len(t, *fatals, 1)
	require.ErrorContains(t, (*fatals)[0], "restart the node")
	resps := f.ApplyBatch([]*raft.Log{command(t, 9, meta.Record{Kind: meta.KindTopicDeleted,
		Topic: "a"})})
	require.ErrorIs(t, resps[0].(error), errNotDelivered)
	require.Empty(t, rec.ins, "nothing is delivered after the end")
}

func TestFSMMarkerFailureEndsTheIncarnation(t *testing.T) {
	f, rec, fatals, _ := testFSM(0)
	f.mark = func(uint64, uint64) error { return errors.New("disk gone") }
	resps := f.ApplyBatch([]*raft.Log{command(t, 1, meta.Record{Kind: meta.KindTopicCreated,
		Topic: "a", Partitions: 1})})
	require.Len(t, *fatals, 1)
	require.ErrorIs(t, resps[0].(error), errNotDelivered)
	require.Empty(t, rec.ins, "a MetaApplied is never delivered above a marker not written")
}

func TestWatcherEpochsIncreaseWithinATerm(t *testing.T) {
	rec := &recorder{}
	w := newWatcher(newOutbox(rec.deliver))
	w.report(-1, 0)
	w.report(-1, 3) // still no leader: no change
	w.report(2, 3)
	w.report(2, 3)
	w.report(-1, 3) // the leader stepped down within its term
	w.report(3, 3)  // impossible in raft, but the epoch still increases
	w.report(3, 4)
	var got []broker.MetaLeaderChanged
	for _, in := range rec.ins {
		got = append(got, in.(broker.MetaLeaderChanged))
	}
	want := []broker.MetaLeaderChanged{}
	for _, lc := range [][2]int64{{-1, 1}, {2, 3<<8 + 1}, {-1, 3<<8 + 2}, {3, 3<<8 + 3},
		{3, 4<<8 + 1}} {
		want = append(want, broker.MetaLeaderChanged{Leader: int32(lc[0]), Epoch: uint64(lc[1])})
	}
	require.Equal(t, want, got)
}
