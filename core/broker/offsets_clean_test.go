package broker

// __consumer_offsets is a compacted topic cleaned by the log cleaner (cleaner.go): these
// tests run the broker over disk logs (disk.PartitionLog on a MemFS), whose cleans
// really remove records, and check what the coordinator replays from the cleaned log.

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/disk"
)

// diskLogs opens the harness's partition logs as disk logs over one MemFS and state
// store, which outlive restarts as a node's disk does.
type diskLogs struct {
	fs    *disk.MemFS
	state *disk.MemState
	logs  map[core.TopicPartition]*disk.PartitionLog
	now   func() int64
}

func (d *diskLogs) dir(tp core.TopicPartition) string {
	return fmt.Sprintf("/data/%s-%d", tp.Topic, tp.Partition)
}

// open (re)opens tp's log; a restart's reopen closes the old handle first.
func (d *diskLogs) open(tp core.TopicPartition, cfg replica.SegmentConfig) (replica.Log,
	error) {
	if old := d.logs[tp]; old != nil {
		_ = old.Close()
	}
	prefix := fmt.Sprintf("log/%s-%d/", tp.Topic, tp.Partition)
	l, err := disk.OpenPartitionLog(d.fs, d.dir(tp), d.state, prefix, cfg, d.now(),
		zap.NewNop())
	if err == nil {
		d.logs[tp] = l
	}
	return l, err
}

// newDiskHarness is newHarness over disk logs.
func newDiskHarness(t *testing.T, opts ...func(*Config)) *harness {
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, cfg: cfg, env: newFakeEnv(t), now: harnessStart, seed: 1}
	h.env.disk = &diskLogs{fs: disk.NewMemFS(), state: disk.NewMemState(),
		logs: map[core.TopicPartition]*disk.PartitionLog{},
		now:  func() int64 { return h.now.Millis() }}
	h.boot()
	return h
}

// runCleans runs every clean the broker asked for (CleanLog) on its log and answers it,
// until it asks for no more; it returns how many segments they rewrote.
func (h *harness) runCleans() int {
	h.t.Helper()
	n := 0
	for len(h.env.cleans) > 0 {
		c := h.env.cleans[0]
		h.env.cleans = h.env.cleans[1:]
		res, err := c.log.(replica.Cleaner).Clean(c.req)
		require.NoError(h.t, err)
		n += res.Segments
		h.step(CleanDone{TP: c.tp, Incarnation: c.inc, Result: res})
		h.settle()
	}
	return n
}

// offsetsLogStats reads an offsets partition from its log start as the coordinator
// replays it: its records, tombstones, batches thinned or emptied by the cleaner, and
// its size on disk.
type offsetsLogStats struct {
	records, tombstones, cleanedBatches, segments int
	bytes                                         int64
	keys                                          map[string]bool // keys with a tombstone
}

func (h *harness) offsetsLog(p int32) offsetsLogStats {
	h.t.Helper()
	tp := core.TopicPartition{Topic: group.OffsetsTopic, Partition: p}
	rep := h.b.replicas[tp]
	st := offsetsLogStats{keys: map[string]bool{}}
	for _, s := range rep.Log().Segments() {
		st.bytes += s.SizeBytes
		st.segments++
	}
	for off := rep.StartOffset(); off < rep.HighWatermark(); {
		res := rep.Read(off, 1<<20)
		require.Zero(h.t, res.Err)
		next := off
		require.NoError(h.t, batch.SplitStored(res.Records, func(bh batch.Header,
			raw []byte) error {
			if bh.NextOffset() <= off {
				return nil
			}
			next = bh.NextOffset()
			if int64(bh.RecordCount) <= int64(bh.LastOffsetDelta) {
				st.cleanedBatches++
			}
			kvs, err := batch.StoredRecords(raw)
			for _, kv := range kvs {
				st.records++
				if kv.Value == nil {
					st.tombstones++
					st.keys[string(kv.Key)] = true
				}
			}
			return err
		}))
		require.Greater(h.t, next, off)
		off = next
	}
	return st
}

func offsetsCleanOpts(c *Config) {
	c.Groups.OffsetsPartitions = 1
	c.Groups.OffsetsSegmentBytes = 2048
	if err := c.Set("log.cleaner.backoff.ms", "1000"); err != nil {
		panic(err)
	}
}

// The offsets topic is created compacted with segments of offsets.topic.segment.bytes,
// and one created before it was (no cleanup.policy) is compacted all the same, never
// deleted by retention, whatever log.cleanup.policy says.
func TestOffsetsTopicIsCompacted(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		require.NoError(t, c.Set("log.cleanup.policy", "delete"))
		require.NoError(t, c.Set("offsets.topic.segment.bytes", "65536"))
	})
	h.do(&kmsg.FindCoordinatorRequest{Version: 4, CoordinatorKeys: []string{"g"}})
	h.settle()
	top := h.b.image.Topic(group.OffsetsTopic)
	require.NotNil(t, top)
	v, _ := top.Override("cleanup.policy")
	require.Equal(t, "compact", v)
	v, _ = top.Override("segment.bytes")
	require.Equal(t, "65536", v)
	cfg := h.b.replicaConfig(top)
	require.True(t, cfg.Compact.Enabled)
	require.True(t, cfg.NoDelete)
	require.EqualValues(t, 86_400_000, cfg.Compact.DeleteRetentionMs, "Kafka's 24 h")

	old := &meta.Topic{Name: group.OffsetsTopic} // created before: no overrides
	cfg = h.b.replicaConfig(old)
	require.True(t, cfg.Compact.Enabled)
	require.True(t, cfg.NoDelete)

	c := DefaultConfig()
	require.Error(t, c.Set("offsets.topic.segment.bytes", "13"))
	require.NoError(t, c.Set("offsets.topic.segment.bytes", "14"))
}

// Committing the same offsets over and over keeps the offsets partition bounded once
// the cleaner ran: its records are about the live ones (latest commit per key, the
// group's metadata, tombstones within delete.retention.ms) plus the active segment's,
// whatever was committed. A restart replays the cleaned log (offset gaps, thinned and
// emptied batches) to the latest offsets, without the deleted group, and a Stable
// group's members keep their generation.
func TestOffsetsTopicStaysBoundedByLiveRecordsAfterCleans(t *testing.T) {
	h := newDiskHarness(t, offsetsCleanOpts)
	h.mustCreate("t", 2)
	a, b := twoMemberGroup(h)
	requireCode(t, nil, commitCodes(h.do(commitReq("dropped", -1, "", "t", int32(0),
		int64(7))))[0])
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"dropped"}
	requireCode(t, nil, h.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode)

	const commits = 400
	cleaned, maxRecords, maxBytes, maxSegments := 0, 0, int64(0), 0
	for i := range commits {
		requireCode(t, nil, commitCodes(h.do(commitReq("g", 1, a.id, "t", int32(0),
			int64(i), "t", int32(1), int64(1000+i))))[0])
		if i%20 == 19 {
			h.advance(time.Second) // the cleaner's timer
			cleaned += h.runCleans()
			requireCode(t, nil, a.heartbeat())
			requireCode(t, nil, b.heartbeat())
			st := h.offsetsLog(0)
			maxRecords, maxBytes = max(maxRecords, st.records), max(maxBytes, st.bytes)
			maxSegments = max(maxSegments, st.segments)
		}
	}
	require.Greater(t, cleaned, 0, "the cleaner rewrote segments")
	st := h.offsetsLog(0)
	require.Greater(t, st.cleanedBatches, 0, "thinned or emptied batches to replay")
	// 2*commits+3 records were written; what stays is the live ones (2 offsets, the
	// group's metadata), the dropped group's two tombstones (24 h retention) and the
	// uncleaned segments: the active one and any not yet cleaned (2 KiB each, about 20
	// records).
	require.Less(t, maxRecords, 100, "records bounded, not growing with commits")
	require.Less(t, maxBytes, int64(8<<10), "bytes bounded (uncleaned: %d commits of "+
		"~110 bytes)", commits)
	require.Less(t, maxSegments, 10, "cleans merge the segments they shrank (~25 rolled)")
	t.Logf("at most %d records, %d bytes, %d segments", maxRecords, maxBytes, maxSegments)
	require.Equal(t, 2, st.tombstones, "the dropped group's tombstones are kept")

	h.restart()
	requireCode(t, nil, a.heartbeat())
	requireCode(t, nil, b.heartbeat())
	require.Equal(t, "Stable", h.describeGroup("g").State)
	off, _ := h.fetchOffset(8, "g", "t", 0)
	require.EqualValues(t, commits-1, off)
	off, _ = h.fetchOffset(8, "g", "t", 1)
	require.EqualValues(t, 1000+commits-1, off)
	off, _ = h.fetchOffset(8, "dropped", "t", 0)
	require.EqualValues(t, -1, off)
	lg := kmsg.NewPtrListGroupsRequest()
	require.Len(t, h.do(lg).(*kmsg.ListGroupsResponse).Groups, 1, "only g")
}

// A tombstone outlives the records it deletes by delete.retention.ms (a replica or
// loader that read the deleted value before still sees the delete), then a clean
// removes it, and a reload still has neither the value nor the group.
func TestOffsetsTombstonesAreKeptForDeleteRetention(t *testing.T) {
	h := newDiskHarness(t, offsetsCleanOpts, func(c *Config) {
		c.Groups.OffsetsSegmentBytes = 1024
		require.NoError(t, c.Set("log.cleaner.delete.retention.ms", "60000"))
	})
	h.mustCreate("t", 1)
	requireCode(t, nil, commitCodes(h.do(commitReq("dropped", -1, "", "t", int32(0),
		int64(7))))[0])
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"dropped"}
	requireCode(t, nil, h.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode)
	commitMany := func(from int) {
		for i := range 60 {
			requireCode(t, nil, commitCodes(h.do(commitReq("g", -1, "", "t", int32(0),
				int64(from+i))))[0])
		}
		h.advance(time.Second)
		h.runCleans()
	}
	commitMany(0)
	tomb := string(group.EncodeKey("dropped", tp("t", 0)))
	st := h.offsetsLog(0)
	require.True(t, st.keys[tomb], "within delete.retention.ms: kept")

	h.advance(61 * time.Second)
	commitMany(100) // new dirty data: the next clean judges the tombstone again
	st = h.offsetsLog(0)
	require.False(t, st.keys[tomb], "past delete.retention.ms: removed")

	h.restart()
	off, _ := h.fetchOffset(8, "dropped", "t", 0)
	require.EqualValues(t, -1, off)
	off, _ = h.fetchOffset(8, "g", "t", 0)
	require.EqualValues(t, 159, off)
	lg := kmsg.NewPtrListGroupsRequest()
	require.Len(t, h.do(lg).(*kmsg.ListGroupsResponse).Groups, 1, "only g")
}

// An offsets topic created before it was compacted (no cleanup.policy, as the retired
// rewrite's nodes created it) is cleaned all the same once the node restarts: its
// commits, written then and after, load from the cleaned log.
func TestOffsetsTopicCreatedBeforeIsCleaned(t *testing.T) {
	h := newDiskHarness(t, offsetsCleanOpts)
	h.mustCreate("t", 1)
	requireCode(t, nil, commitCodes(h.do(commitReq("g", -1, "", "t", int32(0),
		int64(0))))[0])
	for i, rec := range h.env.committed {
		if rec.Kind == meta.KindTopicCreated && rec.Topic == group.OffsetsTopic {
			var cfgs []meta.Config
			for _, c := range rec.Configs {
				if c.Name != "cleanup.policy" {
					cfgs = append(cfgs, c)
				}
			}
			h.env.committed[i].Configs = cfgs
		}
	}
	h.restart()
	_, ok := h.b.image.Topic(group.OffsetsTopic).Override("cleanup.policy")
	require.False(t, ok, "an old offsets topic")
	for i := 1; i <= 200; i++ {
		requireCode(t, nil, commitCodes(h.do(commitReq("g", -1, "", "t", int32(0),
			int64(i))))[0])
		if i%20 == 0 {
			h.advance(time.Second)
			h.runCleans()
		}
	}
	st := h.offsetsLog(0)
	require.Less(t, st.records, 60, "cleaned: 201 commits of one key")
	require.Greater(t, st.cleanedBatches, 0)
	h.restart()
	off, _ := h.fetchOffset(8, "g", "t", 0)
	require.EqualValues(t, 200, off)
}
