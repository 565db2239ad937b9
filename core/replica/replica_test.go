package replica_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

var tp = core.TopicPartition{Topic: "t", Partition: 0}

func cfg(flushAlways bool) replica.Config {
	return replica.Config{
		Segment:     replica.SegmentConfig{SegmentBytes: 1 << 30, SegmentMs: 1 << 40, IndexInterval: 4096},
		RetentionMs: -1, RetentionBytes: -1, MaxMessageBytes: 1 << 20, FlushAlways: flushAlways,
		TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: math.MaxInt64,
	}
}

func newReplica(t *testing.T, log *replicatest.MemLog, c replica.Config) *replica.Replica {
	t.Helper()
	r, err := replica.New(tp, 1, log, c, zap.NewNop())
	require.NoError(t, err)
	return r
}

func plain(vals ...string) []byte {
	kvs := make([]batch.KV, len(vals))
	for i, v := range vals {
		kvs[i] = batch.KV{Value: []byte(v)}
	}
	return batch.Build(kvs, batch.NoProducer, 1000)
}

func idem(pid int64, epoch int16, seq int32, n int) []byte {
	kvs := make([]batch.KV, n)
	for i := range kvs {
		kvs[i] = batch.KV{Value: []byte{byte(i)}}
	}
	return batch.Build(kvs, batch.Producer{ID: pid, Epoch: epoch, BaseSequence: seq}, 1000)
}

// sync runs one whole sync cycle as the broker and driver would.
func sync(t *testing.T, r *replica.Replica) bool {
	t.Helper()
	require.True(t, r.NeedsSync())
	r.BeginSync()
	return r.SyncCompleted(r.Log().Sync())
}

func TestReplicaHighWatermarkFollowsFsyncWhenFlushAlways(t *testing.T) {
	r := newReplica(t, replicatest.NewMemLog(cfg(true).Segment), cfg(true))
	res := r.Append(1, plain("a", "b"))
	require.Zero(t, res.Err)
	require.Equal(t, int64(0), res.BaseOffset)
	require.Equal(t, int64(2), res.WaitOffset)
	require.Equal(t, int64(0), r.HighWatermark(), "unsynced data must not be visible")
	require.Empty(t, r.Read(0, 1<<20).Records)

	r.BeginSync()
	// A batch appended while the sync runs is not covered by it.
	require.Zero(t, r.Append(2, plain("c")).Err)
	require.True(t, r.SyncCompleted(nil))
	require.Equal(t, int64(2), r.HighWatermark())
	require.True(t, r.NeedsSync(), "the later batch needs the next sync")
	require.True(t, sync(t, r))
	require.Equal(t, int64(3), r.HighWatermark())
	require.False(t, r.NeedsSync())
}

func TestReplicaFlushNeverShowsDataAtOnce(t *testing.T) {
	r := newReplica(t, replicatest.NewMemLog(cfg(false).Segment), cfg(false))
	require.Zero(t, r.Append(1, plain("a")).Err)
	require.Equal(t, int64(1), r.HighWatermark())
	require.False(t, r.NeedsSync())
}

func TestReplicaFailedSyncTakesPartitionOffline(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	r := newReplica(t, log, cfg(true))
	require.Zero(t, r.Append(1, plain("a")).Err)
	r.BeginSync()
	require.False(t, r.SyncCompleted(errSyncFailed))
	require.Equal(t, int64(0), r.HighWatermark(), "nothing may be acknowledged after a failed fsync")
	require.Equal(t, kerr.KafkaStorageError.Code, r.Append(2, plain("b")).Err)
	require.Equal(t, kerr.KafkaStorageError.Code, r.Read(0, 100).Err)
}

// Seed 1686: a write that fails unrecoverably while a sync is in flight takes the log
// offline, and the log drops every byte not durable before (replicatest's Crash stands
// for that drop), the ones the sync covers included. The sync's later success must not
// move the high-water mark over them.
func TestReplicaSyncSucceedingAfterTheLogWentOfflineAcknowledgesNothing(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	r := newReplica(t, log, cfg(true))
	require.Zero(t, r.Append(1, plain("a")).Err)
	require.True(t, sync(t, r))
	require.Zero(t, r.Append(2, plain("b")).Err)
	r.BeginSync() // covers "b"
	log.AppendErr = fmt.Errorf("eviction fsync failed: %w", replica.ErrLogOffline)
	require.Equal(t, kerr.KafkaStorageError.Code, r.Append(3, plain("c")).Err)
	require.True(t, r.Offline())
	log.Crash() // the drop of the unsynced bytes
	require.False(t, r.SyncCompleted(log.Sync()), "the high-water mark must not move")
	require.Equal(t, int64(1), r.HighWatermark(), "only the batch synced before the failure")
}

func TestReplicaRejectsBadInput(t *testing.T) {
	r := newReplica(t, replicatest.NewMemLog(cfg(true).Segment), cfg(true))
	b := plain("hello")
	b[len(b)-1] ^= 1
	require.Equal(t, kerr.CorruptMessage.Code, r.Append(1, b).Err)
	require.Equal(t, kerr.CorruptMessage.Code, r.Append(1, []byte{1, 2, 3}).Err)
	big := plain(string(make([]byte, 2<<20)))
	require.Equal(t, kerr.MessageTooLarge.Code, r.Append(1, big).Err)
	two := append(plain("a"), plain("b")...)
	require.Equal(t, kerr.CorruptMessage.Code, r.Append(1, two).Err,
		"a produce carries exactly one batch per partition")
	require.Equal(t, int64(0), r.EndOffset(), "nothing was appended")
}

// Transactions are not served yet: a transactional batch (a well-formed one from an
// idempotent producer, with the attribute bit set) is refused and not stored.
func TestReplicaRefusesTransactionalBatches(t *testing.T) {
	r := newReplica(t, replicatest.NewMemLog(cfg(true).Segment), cfg(true))
	b := idem(7, 0, 0, 2)
	attrs := binary.BigEndian.Uint16(b[21:]) | batch.AttrTransactional
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint32(b[17:], batch.ComputeCRC(b))
	res := r.Append(1, b)
	require.Equal(t, kerr.InvalidRecord.Code, res.Err, res.Message)
	require.Equal(t, int64(0), r.EndOffset(), "nothing was appended")
	require.Zero(t, r.Append(1, idem(7, 0, 0, 2)).Err, "the same batch, not transactional")
}

func TestReplicaIdempotence(t *testing.T) {
	r := newReplica(t, replicatest.NewMemLog(cfg(true).Segment), cfg(true))
	first := r.Append(1, idem(7, 0, 0, 3))
	require.Zero(t, first.Err)
	// A retry of the same batch gets its original offset and appends nothing.
	dup := r.Append(1, idem(7, 0, 0, 3))
	require.True(t, dup.Duplicate)
	require.Equal(t, first.BaseOffset, dup.BaseOffset)
	require.Equal(t, int64(3), r.EndOffset())
	// A gap is refused.
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, r.Append(1, idem(7, 0, 5, 1)).Err)
	// The next sequence is accepted.
	require.Zero(t, r.Append(1, idem(7, 0, 3, 2)).Err)
	// An old epoch is fenced once a newer one wrote.
	require.Zero(t, r.Append(1, idem(7, 1, 0, 1)).Err)
	require.Equal(t, kerr.InvalidProducerEpoch.Code, r.Append(1, idem(7, 0, 5, 1)).Err)
	// A producer the partition never saw must start at 0.
	require.Equal(t, kerr.UnknownProducerID.Code, r.Append(1, idem(8, 0, 4, 1)).Err)
	// Duplicates are only remembered for the last five batches.
	for i := int32(1); i <= 6; i++ {
		require.Zero(t, r.Append(1, idem(7, 1, i, 1)).Err)
	}
	require.True(t, r.Append(1, idem(7, 1, 6, 1)).Duplicate)
	require.Equal(t, kerr.OutOfOrderSequenceNumber.Code, r.Append(1, idem(7, 1, 1, 1)).Err)
}

func TestReplicaProducerStateSurvivesCrash(t *testing.T) {
	log := replicatest.NewMemLog(cfg(true).Segment)
	r := newReplica(t, log, cfg(true))
	first := r.Append(1, idem(7, 0, 0, 2))
	require.Zero(t, first.Err)
	sync(t, r)
	// This batch is lost in the crash: it was never synced.
	require.Zero(t, r.Append(1, idem(7, 0, 2, 2)).Err)
	log.Crash()
	log.Reopen(cfg(true).Segment)
	r = newReplica(t, log, cfg(true))
	require.Equal(t, int64(2), r.EndOffset())
	require.Equal(t, int64(2), r.HighWatermark())
	// The synced batch is still known as a duplicate; the lost one may be sent again.
	require.True(t, r.Append(1, idem(7, 0, 0, 2)).Duplicate)
	res := r.Append(1, idem(7, 0, 2, 2))
	require.Zero(t, res.Err)
	require.Equal(t, int64(2), res.BaseOffset)
}

func TestReplicaReadRules(t *testing.T) {
	r := newReplica(t, replicatest.NewMemLog(cfg(false).Segment), cfg(false))
	for i := 0; i < 3; i++ {
		require.Zero(t, r.Append(1, plain("x", "y")).Err)
	}
	got := r.Read(3, 1)
	require.Zero(t, got.Err)
	h, err := batch.ParseHeader(got.Records)
	require.NoError(t, err)
	require.Equal(t, int64(2), h.BaseOffset, "the batch containing the offset comes back whole")
	require.Equal(t, h.Size(), len(got.Records), "one batch even past maxBytes, no more")
	require.Empty(t, r.Read(6, 100).Records, "reading at the end is empty, not an error")
	require.Equal(t, kerr.OffsetOutOfRange.Code, r.Read(7, 100).Err)

	low, code := r.DeleteRecordsBefore(4)
	require.Zero(t, code)
	require.Equal(t, int64(4), low)
	require.Equal(t, kerr.OffsetOutOfRange.Code, r.Read(3, 100).Err)
	_, code = r.DeleteRecordsBefore(9)
	require.Equal(t, kerr.OffsetOutOfRange.Code, code)
}

func TestReplicaRetentionKeepsActiveAndUnsynced(t *testing.T) {
	c := cfg(true)
	c.RetentionBytes = 1
	log := replicatest.NewMemLog(c.Segment)
	log.BatchesPerSegment = 1
	r := newReplica(t, log, c)
	for i := 0; i < 4; i++ {
		require.Zero(t, r.Append(1, plain("v")).Err)
	}
	sync(t, r)
	require.Zero(t, r.Append(1, plain("unsynced")).Err)
	n := r.EnforceRetention(10)
	require.Equal(t, 4, n, "every whole synced segment goes, not the active one")
	require.Equal(t, int64(4), r.StartOffset())
	require.Equal(t, int64(4), r.HighWatermark())

	c.RetentionBytes, c.RetentionMs = -1, 100
	r.Configure(c)
	sync(t, r)
	require.Zero(t, r.Append(5000, plain("new")).Err)
	sync(t, r)
	require.Equal(t, 1, r.EnforceRetention(1000+101), "the segment stamped 1000 has expired")
	require.Equal(t, int64(5), r.StartOffset())
}
