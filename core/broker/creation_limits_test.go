package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func stormNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return out
}

// autoCreate sends a Metadata request allowing auto-creation and returns how many of
// the named topics came back created and how many LEADER_NOT_AVAILABLE.
func (h *harness) autoCreate(names ...string) (created, deferred int) {
	h.t.Helper()
	resp := h.metadataAt(maxVersion(kmsg.Metadata), true, names...)
	require.Len(h.t, resp.Topics, len(names))
	for _, mt := range resp.Topics {
		switch mt.ErrorCode {
		case 0:
			created++
		case kerr.LeaderNotAvailable.Code:
			deferred++
		default:
			h.t.Fatalf("topic %s: %s", deref(mt.Topic), codeName(mt.ErrorCode))
		}
	}
	return created, deferred
}

// Issue 6 item 6: one Metadata request naming 7,000 unknown topics created 21,000
// partitions in one go. Now a request creates at most
// sluice.auto.create.topics.max.per.request topics, the partitions created per second are
// bounded, and the rest are answered LEADER_NOT_AVAILABLE without being created.
func TestMetadataAutoCreateStormIsBounded(t *testing.T) {
	def := DefaultLimitsConfig()
	require.Equal(t, 20, def.AutoCreateTopicsPerRequest)
	require.Equal(t, 50, def.AutoCreatePartitionsPerSec)
	h := newHarness(t, func(c *Config) {
		c.Limits.AutoCreateTopicsPerRequest, c.Limits.AutoCreatePartitionsPerSec = 50, 300
	})
	lim := h.cfg.Limits
	names := stormNames("storm", 3000)

	// The request's proposals: no more than the per-request cap, each its own commit
	// (one step each, opening one topic's partitions), so other inputs interleave.
	h.holdMeta = true
	id := h.send(autoCreateReq(names))
	require.Len(t, h.env.proposals, lim.AutoCreateTopicsPerRequest)
	other := h.sendOn(2, fetchReq("storm-00000", 0, 0, 0, 1))
	_, answered := h.reply(other)
	require.True(t, answered, "a fetch does not wait for the storm")
	h.holdMeta = false
	h.settle()
	resp, ok := h.reply(id)
	require.True(t, ok)
	created := 0
	for _, mt := range resp.(*kmsg.MetadataResponse).Topics {
		if mt.ErrorCode == 0 {
			created++
		} else {
			requireCode(t, kerr.LeaderNotAvailable, mt.ErrorCode)
			require.Empty(t, mt.Partitions)
		}
	}
	require.Equal(t, lim.AutoCreateTopicsPerRequest, created)
	require.Len(t, h.b.image.TopicNames(), created, "deferred topics are not created")

	// The client retries at once: the bucket (300 partitions, 150 spent) takes one more
	// request's worth, then none until it refills.
	c, _ := h.autoCreate(names...)
	require.Equal(t, 100, c, "50 existing, 50 new")
	c, d := h.autoCreate(names...)
	require.Equal(t, 100, c, "the bucket is empty: nothing new")
	require.Equal(t, 2900, d)

	// Retrying every 100 ms for 10 s: creation proceeds at the configured rate, no faster.
	for range 100 {
		h.advance(100 * time.Millisecond)
		h.autoCreate(names...)
	}
	total := len(h.b.image.TopicNames())
	perSec := lim.AutoCreatePartitionsPerSec / int(h.cfg.NumPartitions)
	require.LessOrEqual(t, total, 100+10*perSec+1)
	require.GreaterOrEqual(t, total, 100+10*perSec-20, "and does proceed")
	require.Len(t, h.b.image.TopicNames(), total)
	require.Len(t, h.b.replicas, total*int(h.cfg.NumPartitions))
}

func autoCreateReq(names []string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = maxVersion(kmsg.Metadata), true
	for _, n := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestMetadataAutoCreateLimitSettings(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		require.NoError(t, c.Set("sluice.auto.create.topics.max.per.request", "2"))
		require.NoError(t, c.Set("sluice.auto.create.partitions.per.sec", "1000"))
	})
	c, d := h.autoCreate("a", "b", "c")
	require.Equal(t, 2, c)
	require.Equal(t, 1, d)
	c, _ = h.autoCreate("a", "b", "c")
	require.Equal(t, 3, c, "the retry creates the deferred topic; existing ones are free")

	off := newHarness(t, func(c *Config) {
		require.NoError(t, c.Set("sluice.auto.create.partitions.per.sec", "0"))
	})
	requireCode(t, kerr.UnknownTopicOrPartition,
		off.metadataAt(maxVersion(kmsg.Metadata), true, "x").Topics[0].ErrorCode,
		"rate 0 is auto-creation off, not a retry forever")
	require.Empty(t, off.b.image.TopicNames())

	var cfg Config = DefaultConfig()
	require.Error(t, cfg.Set("sluice.auto.create.partitions.per.sec", "-1"))
	require.Contains(t, SettingNames(), "sluice.auto.create.topics.max.per.request")
}

// CreateTopics against sluice.controller.mutation.rate: KIP-599's strict quota from v6
// (THROTTLING_QUOTA_EXCEEDED once the bucket is empty, throttle time in the response),
// permissive before (created, throttle time only).
func TestCreateTopicsMutationQuota(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.ControllerMutationRate = 10 })
	resp := h.createTopicsAt(7, false, ctTopic("a", 6, -1), ctTopic("b", 6, -1),
		ctTopic("c", 6, -1))
	require.Zero(t, resp.Topics[0].ErrorCode)
	require.Zero(t, resp.Topics[1].ErrorCode, "admitted while the bucket is not empty")
	requireCode(t, kerr.ThrottlingQuotaExceeded, resp.Topics[2].ErrorCode)
	require.Contains(t, deref(resp.Topics[2].ErrorMessage), "sluice.controller.mutation.rate")
	require.Equal(t, int32(201), resp.ThrottleMillis, "2 partitions over at 10/s")
	require.Nil(t, h.b.image.Topic("c"))

	old := h.createTopicsAt(5, false, ctTopic("d", 6, -1))
	require.Zero(t, old.Topics[0].ErrorCode, "v5 does not know the error: created")
	require.Greater(t, old.ThrottleMillis, int32(201))

	h.advance(2 * time.Second)
	resp = h.createTopicsAt(7, false, ctTopic("c", 6, -1))
	require.Zero(t, resp.Topics[0].ErrorCode, "the bucket refilled")

	free := newHarness(t)
	for i := range 20 {
		free.mustCreate(fmt.Sprintf("t%d", i), 100) // unlimited by default, as in Kafka
	}
}
