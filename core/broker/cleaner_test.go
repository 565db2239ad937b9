package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
)

// keyed builds one uncompressed batch of key/value records (a nil value: tombstone).
func keyed(kv ...[]byte) []byte {
	var recs []batch.KV
	for i := 0; i+1 < len(kv); i += 2 {
		recs = append(recs, batch.KV{Key: kv[i], Value: kv[i+1]})
	}
	return batch.Build(recs, batch.NoProducer, 0)
}

// cleanup.policy takes Kafka's list syntax; compact turns retention off unless delete
// is listed too; AlterConfigs moves a topic to and from compaction.
func TestCleanupPolicyValuesAndAlter(t *testing.T) {
	for _, v := range []string{"delete", "compact", "compact,delete", "delete,compact",
		"compact, delete"} {
		require.NoError(t, validCleanupPolicy(v), v)
	}
	for _, v := range []string{"", "compacted", "compact,", "delete;compact"} {
		require.Error(t, validCleanupPolicy(v), v)
	}
	h := newHarness(t)
	h.mustCreate("c", 1, "cleanup.policy=compact")
	h.mustCreate("cd", 1, "cleanup.policy=compact,delete")
	h.mustCreate("d", 1)
	for name, want := range map[string][2]bool{"c": {true, true}, "cd": {true, false},
		"d": {false, false}} {
		cfg := h.b.replicaConfig(h.b.image.Topic(name))
		require.Equal(t, want[0], cfg.Compact.Enabled, name)
		require.Equal(t, want[1], cfg.NoDelete, name)
		require.EqualValues(t, 86400000, cfg.Compact.DeleteRetentionMs)
		require.InDelta(t, 0.5, cfg.Compact.MinDirtyRatio, 1e-9)
	}
	resp := h.alterConfigs(alterReq(2, false, acRes(kmsg.ConfigResourceTypeTopic, "d",
		"cleanup.policy", "compact", "min.cleanable.dirty.ratio", "0.2")))
	requireCode(t, nil, resp.Resources[0].ErrorCode, deref(resp.Resources[0].ErrorMessage))
	cfg := h.b.replicaConfig(h.b.image.Topic("d"))
	require.True(t, cfg.Compact.Enabled)
	require.InDelta(t, 0.2, cfg.Compact.MinDirtyRatio, 1e-9)
	resp = h.alterConfigs(alterReq(2, false, acRes(kmsg.ConfigResourceTypeTopic, "c",
		"cleanup.policy", "delete")))
	requireCode(t, nil, resp.Resources[0].ErrorCode, deref(resp.Resources[0].ErrorMessage))
	require.False(t, h.b.replicaConfig(h.b.image.Topic("c")).Compact.Enabled)
	resp = h.alterConfigs(alterReq(2, false, acRes(kmsg.ConfigResourceTypeTopic, "c",
		"cleanup.policy", "compact,bogus")))
	requireCode(t, kerr.InvalidConfig, resp.Resources[0].ErrorCode)
	resp = h.alterConfigs(alterReq(2, false, acRes(kmsg.ConfigResourceTypeTopic, "c",
		"min.cleanable.dirty.ratio", "1.5")))
	requireCode(t, kerr.InvalidConfig, resp.Resources[0].ErrorCode)
}

// A record without a key is refused on a compacted topic (INVALID_RECORD, as Kafka),
// accepted on a delete topic.
func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("c", 1, "cleanup.policy=compact")
	h.mustCreate("d", 1)
	p := producePart(t, h.do(produceReq(-1, "c", 0, values("a"))))
	require.Equal(t, kerr.InvalidRecord, kerr.ErrorForCode(p.ErrorCode))
	require.Contains(t, deref(p.ErrorMessage), "without key")
	p = producePart(t, h.do(produceReq(-1, "c", 0, keyed([]byte("k"), []byte("v"),
		[]byte("k"), nil))))
	require.Zero(t, p.ErrorCode)
	p = producePart(t, h.do(produceReq(-1, "d", 0, values("a"))))
	require.Zero(t, p.ErrorCode)
}

// The cleaner's timer runs only while a compacted partition is hosted; a pass asks for
// one CleanLog at a time, of closed segments below the high-water mark, and the next
// pass waits for its CleanDone.
func TestCleanerIsScheduledOnlyForCompactedTopics(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		require.NoError(t, c.Set("log.cleaner.backoff.ms", "1000"))
	})
	h.env.batchesPerSegment = 2
	h.restart()
	h.mustCreate("d", 1)
	for i := 0; i < 6; i++ {
		producePart(t, h.do(produceReq(-1, "d", 0, values("a"))))
	}
	h.advance(5 * time.Second)
	require.Empty(t, h.env.cleans, "no compacted topic: no clean")

	h.mustCreate("c", 1, "cleanup.policy=compact")
	for i := 0; i < 6; i++ {
		p := producePart(t, h.do(produceReq(-1, "c", 0, keyed([]byte("k"), []byte("v")))))
		require.Zero(t, p.ErrorCode)
	}
	h.advance(5 * time.Second)
	require.Len(t, h.env.cleans, 1, "one clean in flight at a time")
	c := h.env.cleans[0]
	require.Equal(t, tp("c", 0), c.tp)
	require.EqualValues(t, 0, c.req.DirtyStart)
	require.EqualValues(t, 4, c.req.UpTo, "closed segments only: [0,2) [2,4), not [4,6)")
	require.EqualValues(t, 32<<20, c.req.KeyMapBytes)
	h.step(CleanDone{TP: c.tp, Incarnation: c.inc,
		Result: replica.CleanResult{CleanedTo: 4}})
	h.advance(5 * time.Second)
	require.Len(t, h.env.cleans, 1, "nothing dirty after it")
}

// log.cleanup.policy=compact,delete makes new topics compacted and deleted by
// retention, but __consumer_offsets is compacted only: retention would remove live
// offsets (offsets_clean_test.go has the rest).
func TestBrokerWideCompactDeleteLeavesTheOffsetsTopicCompactOnly(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		require.NoError(t, c.Set("log.cleanup.policy", "compact,delete"))
	})
	h.mustCreate("t", 1)
	cfg := h.b.replicaConfig(h.b.image.Topic("t"))
	require.True(t, cfg.Compact.Enabled)
	require.False(t, cfg.NoDelete)
	off := &meta.Topic{Name: group.OffsetsTopic}
	cfg = h.b.replicaConfig(off)
	require.True(t, cfg.Compact.Enabled)
	require.True(t, cfg.NoDelete)
}

// max.compaction.lag.ms on a compacted topic also rolls the active segment (Kafka's
// roll age is the shorter of segment.ms and it), so a record that is never followed by
// a full segment still becomes cleanable: with min.cleanable.dirty.ratio=1, which never
// starts a clean, the lag alone cleans it once it is older than the lag.
func TestMaxCompactionLagRollsTheActiveSegmentAndForcesAClean(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		require.NoError(t, c.Set("log.cleaner.backoff.ms", "1000"))
	})
	h.mustCreate("c", 1, "cleanup.policy=compact", "max.compaction.lag.ms=60000",
		"min.cleanable.dirty.ratio=1")
	h.mustCreate("d", 1, "max.compaction.lag.ms=60000")
	require.EqualValues(t, 60000, h.b.replicaConfig(h.b.image.Topic("c")).Segment.SegmentMs)
	require.EqualValues(t, 604800000, h.b.replicaConfig(h.b.image.Topic("d")).Segment.SegmentMs,
		"not compacted: segment.ms alone")

	produce := func() {
		t.Helper()
		p := producePart(t, h.do(produceReq(-1, "c", 0, keyed([]byte("k"), []byte("v")))))
		require.Zero(t, p.ErrorCode)
	}
	produce()
	h.advance(59 * time.Second)
	produce() // the segment is 59 s old: no roll
	h.advance(2 * time.Second)
	require.Empty(t, h.env.cleans, "nothing closed yet")
	produce() // 61 s: rolls, and the closed segment's first record is 61 s old
	h.advance(2 * time.Second)
	require.Len(t, h.env.cleans, 1)
	require.EqualValues(t, 2, h.env.cleans[0].req.UpTo, "the two records of the old segment")
}
