package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// hostedCount counts the partitions of topic whose logs are open.
func (h *harness) hostedCount(topic string) int {
	n := 0
	for tp := range h.b.replicas {
		if tp.Topic == topic {
			n++
		}
	}
	return n
}

// stepDueTimer fires the one timer due now (the next chunk of opens) and fails the test
// when there is none.
func (h *harness) stepDueTimer() {
	h.t.Helper()
	require.NotEmpty(h.t, h.env.timers, "no timer armed for the next chunk")
	tm := h.env.timers[0]
	require.LessOrEqual(h.t, tm.at, h.now, "the next chunk's timer is not due now")
	h.env.timers = h.env.timers[1:]
	h.step(TimerFired{ID: tm.id})
}

// A CreateTopics of 1,000 partitions opens at most openChunk logs per step; between
// steps another client's produce is answered, the partitions not open yet answer
// LEADER_NOT_AVAILABLE (Produce, Metadata), and the creation is answered only once every
// log is open.
func TestBigCreateOpensInChunksAndServesOthersBetween(t *testing.T) {
	const parts = 1000
	h := newHarness(t)
	h.mustCreate("busy", 1)
	h.holdTimers = true

	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = maxVersion(kmsg.CreateTopics), 5000
	req.Topics = []kmsg.CreateTopicsRequestTopic{ctTopic("big", parts, -1)}
	create := h.send(req)
	h.settle() // the record commits and applies: the first chunk opens
	require.Equal(t, openChunk, h.hostedCount("big"))

	steps := 1
	for {
		_, answered := h.reply(create)
		if h.hostedCount("big") == parts {
			require.True(t, answered, "all logs are open but the creation is unanswered")
			break
		}
		require.False(t, answered, "answered with %d of %d logs open",
			h.hostedCount("big"), parts)

		// Another client is served between chunks.
		requireCode(t, nil, producePart(t, h.do(produceReq(-1, "busy", 0,
			values("x")))).ErrorCode)
		// A partition not open yet is not an error a client gives up on.
		requireCode(t, kerr.LeaderNotAvailable, producePart(t, h.do(produceReq(-1, "big",
			parts-1, values("y")))).ErrorCode)
		mp := h.topicMeta("big").Partitions
		requireCode(t, nil, mp[0].ErrorCode)
		requireCode(t, kerr.LeaderNotAvailable, mp[parts-1].ErrorCode)
		require.EqualValues(t, -1, mp[parts-1].Leader)

		before := h.hostedCount("big")
		h.stepDueTimer()
		require.LessOrEqual(t, h.hostedCount("big")-before, openChunk)
		steps++
	}
	require.Equal(t, (parts+openChunk-1)/openChunk, steps)
	resp, _ := h.reply(create)
	requireCode(t, nil, resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	requireCode(t, nil, producePart(t, h.do(produceReq(-1, "big", parts-1,
		values("z")))).ErrorCode)
	requireCode(t, nil, h.topicMeta("big").Partitions[parts-1].ErrorCode)

	// At Start the node serves nobody yet: every log opens in the Start step.
	h.restart()
	require.Equal(t, parts, h.hostedCount("big"))
	require.Empty(t, h.b.opens.queue)
}

// CreatePartitions and the requests queued behind a big creation wait for its logs:
// the admin operation after it starts only once they are all open.
func TestBigCreatePartitionsAnswersOnceOpen(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("grow", 1)
	h.holdTimers = true
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version, req.TimeoutMillis = maxVersion(kmsg.CreatePartitions), 5000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "grow", 1+3*openChunk
	req.Topics = append(req.Topics, rt)
	grow := h.send(req)
	h.settle()
	next := kmsg.NewPtrCreateTopicsRequest()
	next.Version, next.TimeoutMillis = maxVersion(kmsg.CreateTopics), 5000
	next.Topics = []kmsg.CreateTopicsRequestTopic{ctTopic("after", 1, -1)}
	after := h.send(next)
	h.settle()
	for range 2 {
		_, answered := h.reply(grow)
		require.False(t, answered)
		_, answered = h.reply(after)
		require.False(t, answered, "the next admin operation ran before the logs opened")
		h.stepDueTimer()
		h.settle()
	}
	require.Equal(t, 1+3*openChunk, h.hostedCount("grow"))
	resp, ok := h.reply(grow)
	require.True(t, ok)
	requireCode(t, nil, resp.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode)
	resp, ok = h.reply(after)
	require.True(t, ok)
	requireCode(t, nil, resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode)
	require.True(t, h.hosted("after", 0))
	for _, tm := range h.env.timers {
		require.Greater(t, tm.at, h.now, "a chunk timer is left armed")
	}
}

// Metadata auto-creation of a topic with more partitions than one chunk answers once
// every log is open, so the topic comes back ready to use; until then a Fetch of a
// partition not open yet gets LEADER_NOT_AVAILABLE.
func TestAutoCreateOfABigTopicAnswersWhenReady(t *testing.T) {
	parts := int32(3*openChunk + 1)
	h := newHarness(t, func(c *Config) {
		c.NumPartitions = parts
		c.Limits.AutoCreatePartitionsPerSec = 10_000
	})
	h.holdTimers = true
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = maxVersion(kmsg.Metadata), true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("auto")
	req.Topics = append(req.Topics, rt)
	id := h.send(req)
	h.settle()
	_, answered := h.reply(id)
	require.False(t, answered, "answered before the logs opened")
	fr := h.do(fetchReq("auto", parts-1, 0, 0, 1)).(*kmsg.FetchResponse)
	requireCode(t, kerr.LeaderNotAvailable, fr.Topics[0].Partitions[0].ErrorCode)

	h.holdTimers = false
	h.settle()
	resp, ok := h.reply(id)
	require.True(t, ok)
	mt := resp.(*kmsg.MetadataResponse).Topics[0]
	requireCode(t, nil, mt.ErrorCode)
	require.Len(t, mt.Partitions, int(parts))
	for _, p := range mt.Partitions {
		requireCode(t, nil, p.ErrorCode, "partition %d", p.Partition)
	}
}

// sluice.open.logs.per.step sets the chunk; below 1 it is refused.
func TestOpenLogsPerStepSetting(t *testing.T) {
	cfg := DefaultConfig()
	require.Equal(t, openChunk, cfg.Limits.OpenLogsPerStep)
	require.Error(t, cfg.Set("sluice.open.logs.per.step", "0"))
	h := newHarness(t, func(c *Config) {
		require.NoError(t, c.Set("sluice.open.logs.per.step", "2"))
	})
	h.holdTimers = true
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version, req.TimeoutMillis = maxVersion(kmsg.CreateTopics), 5000
	req.Topics = []kmsg.CreateTopicsRequestTopic{ctTopic("five", 5, -1)}
	id := h.send(req)
	h.settle()
	for _, want := range []int{2, 4, 5} {
		require.Equal(t, want, h.hostedCount("five"))
		_, answered := h.reply(id)
		require.Equal(t, want == 5, answered)
		if want < 5 {
			h.stepDueTimer()
		}
	}
}
