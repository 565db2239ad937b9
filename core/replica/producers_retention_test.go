package replica_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/probe"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// A producer whose batches all went with retention before any producer snapshot covered
// them, retrying its first batch after a restart: the retry must be answered as the
// duplicate it is, with the original offset, not appended again (simulator seed 3687:
// Kafka keeps producer state past retention, KIP-360). The variants cover flush
// policies, a machine crash after the deletion, and DeleteRecords instead of retention.
func TestProducerStateSurvivesRetentionAndRestart(t *testing.T) {
	for _, tc := range []struct {
		name        string
		flushAlways bool
		pending     bool   // a batch not yet durable when the start moves
		deleteBy    string // "retention" or "delete-records"
		crash       bool   // lose the page cache instead of a process restart
		probe       string // how the snapshot before the deletion was taken
	}{
		{"retention, flush always, all durable", true, false, "retention", false,
			"replica/producer-snapshot-rebuilt-before-delete"},
		{"retention, flush always, a batch pending", true, true, "retention", false,
			"replica/producer-snapshot-rebuilt-before-delete"},
		{"retention, flush always, a batch pending, crash", true, true, "retention", true,
			"replica/producer-snapshot-rebuilt-before-delete"},
		{"retention, flush never", false, true, "retention", false,
			"replica/producer-snapshot-rebuilt-before-delete"},
		{"delete records, flush always", true, false, "delete-records", false,
			"replica/producer-snapshot-rebuilt-before-delete"},
		{"delete records to the end, flush always", true, false, "delete-records-to-end",
			false, "replica/producer-snapshot-before-delete"},
		{"delete records, flush always, a batch pending, crash", true, true,
			"delete-records", true, "replica/producer-snapshot-rebuilt-before-delete"},
		{"delete records, flush never", false, true, "delete-records", false,
			"replica/producer-snapshot-rebuilt-before-delete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg(tc.flushAlways)
			c.Probes = probe.NewSet()
			c.SnapshotEveryBatches = 31
			log := replicatest.NewMemLog(c.Segment)
			log.BatchesPerSegment = 2
			r := newReplica(t, log, c)
			first := r.Append(1, idem(7, 0, 0, 3))
			require.Zero(t, first.Err)
			require.Zero(t, r.Append(1, idem(7, 0, 3, 2)).Err)
			for i := 0; i < 4; i++ {
				require.Zero(t, r.Append(1, plain("x")).Err)
			}
			if tc.flushAlways {
				sync(t, r)
			}
			require.Zero(t, hits(t, c.Probes, "replica/producer-snapshot-saved"),
				"no snapshot yet: fewer batches than the interval")
			if tc.pending {
				require.Zero(t, r.Append(2, idem(8, 0, 0, 1)).Err)
			}
			switch tc.deleteBy {
			case "retention":
				c.RetentionMs = 100
				r.Configure(c)
				require.Positive(t, r.EnforceRetention(10_000))
			case "delete-records":
				start, code := r.DeleteRecordsBefore(7)
				require.Zero(t, code)
				require.Equal(t, int64(7), start)
			case "delete-records-to-end":
				start, code := r.DeleteRecordsBefore(r.EndOffset())
				require.Zero(t, code)
				require.Equal(t, r.EndOffset(), start)
			}
			require.Greater(t, r.StartOffset(), int64(4), "every batch of producer 7 is gone")
			require.Equal(t, uint64(1), hits(t, c.Probes, tc.probe))
			// More batches after the deletion, not covered by any snapshot either.
			require.Zero(t, r.Append(2, plain("y")).Err)
			if tc.crash {
				log.Crash()
			}
			log.Close()
			log.Reopen(c.Segment)

			again, err := replica.New(tp, 2, log, c, zap.NewNop())
			require.NoError(t, err)
			dup := again.Append(3, idem(7, 0, 0, 3))
			require.Zero(t, dup.Err)
			require.True(t, dup.Duplicate, "a retry of an acknowledged batch is a duplicate")
			require.Equal(t, first.BaseOffset, dup.BaseOffset)
			next := again.Append(3, idem(7, 0, 5, 1))
			require.Zero(t, next.Err, "the producer's next sequence is still accepted")
			require.False(t, next.Duplicate)
		})
	}
}

// When the producer snapshot cannot be saved, the log start does not move: retention
// deletes nothing and DeleteRecords answers KAFKA_STORAGE_ERROR, so no batch goes before
// a snapshot describes it; both proceed once the snapshot can be saved again.
func TestLogStartWaitsForTheProducerSnapshot(t *testing.T) {
	c := cfg(false)
	c.Probes = probe.NewSet()
	log := replicatest.NewMemLog(c.Segment)
	log.BatchesPerSegment = 1
	r := newReplica(t, log, c)
	for i := 0; i < 4; i++ {
		require.Zero(t, r.Append(1, idem(7, 0, int32(i), 1)).Err)
	}
	log.SnapshotErr = errors.New("state store full")
	c.RetentionMs = 100
	r.Configure(c)
	require.Zero(t, r.EnforceRetention(10_000))
	_, code := r.DeleteRecordsBefore(2)
	require.Equal(t, kerr.KafkaStorageError.Code, code)
	require.Zero(t, r.StartOffset())
	require.Equal(t, uint64(2), hits(t, c.Probes, "replica/delete-held-for-producer-snapshot"))

	log.SnapshotErr = nil
	require.Equal(t, 3, r.EnforceRetention(10_000))
	require.Equal(t, int64(3), r.StartOffset())
}

// A follower that retention trimmed past every batch of a producer, and that then cuts
// a divergent tail down to its new log start, still knows that producer, and so does
// the leader it becomes and the same replica after a restart (simulator seed 2642). The
// snapshot taken before the deletion used to sit at the log end: the truncation deleted
// it with the tail, the table was rebuilt from the log alone, and the producer's next
// batch was answered UNKNOWN_PRODUCER_ID.
func TestProducerStateSurvivesRetentionThenTruncation(t *testing.T) {
	c := cfg(true)
	c.Probes = probe.NewSet()
	c.SnapshotEveryBatches = 2 // later snapshots, above the start, crowd the log's store
	log := replicatest.NewMemLog(c.Segment)
	log.BatchesPerSegment = 2
	f := newReplica(t, log, c)
	f.BecomeFollower(1)
	add := func(b []byte, base int64, epoch int32) {
		t.Helper()
		_, err := f.AppendReplicated(1000, leaderBatch(t, b, base, epoch))
		require.NoError(t, err)
	}
	add(idem(7, 0, 0, 3), 0, 1) // producer 7: offsets 0..4, the first segment
	add(idem(7, 0, 3, 2), 3, 1)
	for off := int64(5); off < 9; off++ {
		add(plain("x"), off, 1)
	}
	sync(t, f)
	require.True(t, f.SetLeaderHighWatermark(9))
	c.RetentionMs = 100
	f.Configure(c)
	require.Equal(t, 2, f.EnforceRetention(10_000))
	require.EqualValues(t, 9-2, f.StartOffset(), "every batch of producer 7 is gone")
	for off := int64(9); off < 21; off++ { // a tail the next leader never had
		add(plain("y"), off, 2)
		sync(t, f)
	}

	end, err := f.TruncateTo(f.StartOffset())
	require.NoError(t, err)
	require.Equal(t, f.StartOffset(), end)
	require.NoError(t, f.BecomeLeader(3))
	dup := f.Append(1000, idem(7, 0, 0, 3))
	require.Zero(t, dup.Err)
	require.True(t, dup.Duplicate, "a retry of an acknowledged batch is a duplicate")
	require.EqualValues(t, 0, dup.BaseOffset)
	require.Zero(t, f.Append(1000, idem(7, 0, 5, 1)).Err, "the next sequence is taken")

	log.Close()
	log.Reopen(c.Segment)
	again, err := replica.New(tp, 2, log, c, zap.NewNop())
	require.NoError(t, err)
	require.NoError(t, again.BecomeLeader(3))
	dup = again.Append(1000, idem(7, 0, 5, 1))
	require.Zero(t, dup.Err)
	require.True(t, dup.Duplicate, "after a restart too")
}
