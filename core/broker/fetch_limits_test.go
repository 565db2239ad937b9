package broker

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/batch"
)

// fillLog produces n batches of one record of size bytes each to topic partition part.
func (h *harness) fillLog(topic string, part int32, n, size int) {
	h.t.Helper()
	records := values(string(make([]byte, size)))
	for range n {
		resp := h.do(produceReq(-1, topic, part, records)) // the codec copies records
		require.Zero(h.t, producePart(h.t, resp).ErrorCode)
	}
}

// hugeFetch asks for every partition given from offset 0 with MaxBytes and
// PartitionMaxBytes at 2^31-1, as the hostile client of issue 6 did.
func hugeFetch(topic string, parts ...int32) *kmsg.FetchRequest {
	req := fetchReq(topic, parts[0], 0, 0, 1)
	req.MaxBytes = math.MaxInt32
	req.Topics[0].Partitions[0].PartitionMaxBytes = math.MaxInt32
	for _, p := range parts[1:] {
		rp := req.Topics[0].Partitions[0]
		rp.Partition = p
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	return req
}

func responseBytes(t *testing.T, resp kmsg.Response) (total int, perPart []int) {
	t.Helper()
	fr := resp.(*kmsg.FetchResponse)
	require.Zero(t, fr.ErrorCode)
	for _, rt := range fr.Topics {
		for _, p := range rt.Partitions {
			require.Zero(t, p.ErrorCode)
			n := 0
			require.NoError(t, batch.Split(p.RecordBatches, func(batch.Header, []byte) error {
				n++
				return nil
			}))
			total += len(p.RecordBatches)
			perPart = append(perPart, len(p.RecordBatches))
		}
	}
	return total, perPart
}

// Issue 6 item 2: MaxBytes 2^31-1 over a log bigger than fetch.max.bytes returned the
// whole log in one response. Now the response holds at most the default 55 MiB.
func TestFetchHugeMaxBytesIsCappedAtFetchMaxBytes(t *testing.T) {
	h := newHarness(t)
	require.Equal(t, 57_671_680, h.cfg.Limits.FetchMaxBytes, "Kafka's default")
	h.mustCreate("big", 1)
	const batchSize = 1<<20 - 100      // within max.message.bytes
	h.fillLog("big", 0, 60, batchSize) // 60 MiB plus framing: more than 55 MiB
	total, _ := responseBytes(t, h.do(hugeFetch("big", 0)))
	require.LessOrEqual(t, total, h.cfg.Limits.FetchMaxBytes)
	require.Greater(t, total, h.cfg.Limits.FetchMaxBytes-2*batchSize,
		"the cap is a bound, not a much smaller answer")
}

func TestFetchCapSpansPartitionsAndKeepsTheFirstBatch(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.FetchMaxBytes = 10_000 })
	h.mustCreate("t", 3)
	for p := range int32(3) {
		h.fillLog("t", p, 20, 1000)
	}
	total, per := responseBytes(t, h.do(hugeFetch("t", 0, 1, 2)))
	require.LessOrEqual(t, total, 10_000)
	require.Greater(t, per[0], 0)
	require.Equal(t, total, per[0]+per[1]+per[2])

	// A first batch bigger than the cap still comes alone (KIP-74), so that a consumer
	// never stalls on it; the other partitions get nothing.
	h2 := newHarness(t, func(c *Config) { c.Limits.FetchMaxBytes = 2000 })
	h2.mustCreate("t", 2)
	h2.fillLog("t", 0, 2, 5000)
	h2.fillLog("t", 1, 2, 100)
	total, per = responseBytes(t, h2.do(hugeFetch("t", 0, 1)))
	require.Greater(t, per[0], 5000, "the first batch whole")
	require.Less(t, per[0], 2*5000, "and only it")
	require.Zero(t, per[1], "nothing past the cap once the response is not empty")
	require.Equal(t, total, per[0])

	// PartitionMaxBytes 0 still gives the first non-empty partition its first batch.
	req := hugeFetch("t", 1)
	req.Topics[0].Partitions[0].PartitionMaxBytes = 0
	_, per = responseBytes(t, h2.do(req))
	require.Greater(t, per[0], 0)
}

func TestFetchFromAFollowerUsesReplicaFetchResponseMaxBytes(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Limits.FetchMaxBytes = 100_000
		c.Limits.ReplicaFetchResponseMaxBytes = 5_000
	})
	h.mustCreate("t", 1)
	h.fillLog("t", 0, 50, 1000)
	consumer, _ := responseBytes(t, h.do(hugeFetch("t", 0)))
	require.Greater(t, consumer, 5_000)
	require.LessOrEqual(t, consumer, 100_000)
	req := hugeFetch("t", 0)
	req.ReplicaID = 2
	follower, _ := responseBytes(t, h.do(req))
	require.Greater(t, follower, 0)
	require.LessOrEqual(t, follower, 5_000)

	// A smaller MaxBytes from the client still wins, and MaxBytes <= 0 means the cap.
	req = hugeFetch("t", 0)
	req.MaxBytes = 3_000
	small, _ := responseBytes(t, h.do(req))
	require.LessOrEqual(t, small, 3_000)
	req.MaxBytes = 0
	capped, _ := responseBytes(t, h.do(req))
	require.Equal(t, consumer, capped)
}

func TestFetchLimitSettings(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Set("fetch.max.bytes", "1048576"))
	require.NoError(t, c.Set("replica.fetch.response.max.bytes", "2048"))
	require.Equal(t, 1<<20, c.Limits.FetchMaxBytes)
	require.Equal(t, 2048, c.Limits.ReplicaFetchResponseMaxBytes)
	require.ErrorContains(t, c.Set("fetch.max.bytes", "100"), "minimum 1024")
	require.Error(t, c.Set("fetch.max.bytes", "lots"))
	require.Contains(t, SettingNames(), "fetch.max.bytes")
}

// Issue 6 item 7: kafka-go's Client.Fetch sends SessionEpoch -1 (a sessionless full
// fetch) with whatever SessionID; Kafka serves it. Epoch 0 asks for a new session and
// is served in full too. Only incremental epochs name a session the broker must have
// (fetch_session_test.go covers sessions).
func TestFetchSessionlessAndFullFetchesAreServed(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.fillLog("t", 0, 1, 10)
	for _, c := range []struct{ id, epoch int32 }{{0, -1}, {42, -1}, {0, 0}, {42, 0}} {
		req := fetchReq("t", 0, 0, 0, 1)
		req.SessionID, req.SessionEpoch = c.id, c.epoch
		resp := h.do(req).(*kmsg.FetchResponse)
		require.Zero(t, resp.ErrorCode, "session %d epoch %d", c.id, c.epoch)
		require.Equal(t, c.epoch == 0, resp.SessionID != 0,
			"a session is created exactly for epoch 0")
		require.NotEmpty(t, fetchPart(t, resp).RecordBatches, "session %d epoch %d",
			c.id, c.epoch)
	}
	for _, c := range []struct{ id, epoch int32 }{{42, 1}, {0, 3}, {42, -2}} {
		req := fetchReq("t", 0, 0, 0, 1)
		req.SessionID, req.SessionEpoch = c.id, c.epoch
		requireCode(t, kerr.FetchSessionIDNotFound, h.do(req).(*kmsg.FetchResponse).ErrorCode,
			"session %d epoch %d", c.id, c.epoch)
	}
}

// The size rules of a Fetch response, over random logs and limits: the records stay
// within min(MaxBytes, fetch.max.bytes) and each partition within its
// PartitionMaxBytes, except that the first partition with data always gets its first
// batch (KIP-74), and then nothing else may exceed the limits.
func TestFetchSizeRulesRapid(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		capBytes := rapid.IntRange(1024, 20_000).Draw(rt, "fetch.max.bytes")
		h := newHarness(t, func(c *Config) { c.Limits.FetchMaxBytes = capBytes })
		h.env.lg = zap.NewNop()
		h.b.lg = zap.NewNop()
		parts := rapid.Int32Range(1, 4).Draw(rt, "partitions")
		h.mustCreate("t", parts)
		batchSizes := map[int32]int{}
		for p := range parts {
			n := rapid.IntRange(0, 6).Draw(rt, "batches")
			size := rapid.IntRange(10, 8_000).Draw(rt, "value bytes")
			batchSizes[p] = len(values(string(make([]byte, size))))
			if n > 0 {
				h.fillLog("t", p, n, size)
			}
		}
		req := hugeFetch("t", 0)
		req.Topics[0].Partitions = nil
		for p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch = p, -1
			rp.PartitionMaxBytes = rapid.Int32Range(-1, 30_000).Draw(rt, "partition max")
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		}
		req.MaxBytes = rapid.Int32Range(-1, 40_000).Draw(rt, "max bytes")
		budget := capBytes
		if req.MaxBytes > 0 {
			budget = min(budget, int(req.MaxBytes))
		}
		total, per := responseBytes(t, h.do(req))
		first := -1 // index of the first partition with data
		for i, p := range req.Topics[0].Partitions {
			if h.b.replicas[tp("t", p.Partition)].HighWatermark() > 0 && first < 0 {
				first = i
			}
		}
		for i, p := range req.Topics[0].Partitions {
			switch {
			case i == first:
				require.GreaterOrEqual(rt, per[i], batchSizes[p.Partition],
					"the first partition with data gets at least its first batch")
				if per[i] > max(budget, int(p.PartitionMaxBytes)) {
					require.Equal(rt, batchSizes[p.Partition], per[i], "over a limit: one batch")
				}
			default:
				require.LessOrEqual(rt, per[i], max(int(p.PartitionMaxBytes), 0))
			}
		}
		if total > budget {
			require.Equal(rt, per[first], total, "only the KIP-74 batch goes past the budget")
			require.Equal(rt, batchSizes[req.Topics[0].Partitions[first].Partition], total)
		}
	})
}
