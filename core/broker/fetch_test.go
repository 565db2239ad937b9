package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
)

func tp(topic string, p int32) core.TopicPartition {
	return core.TopicPartition{Topic: topic, Partition: p}
}

func fetchReq(topic string, part int32, offset int64, waitMs, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxVersion(kmsg.Fetch),
		waitMs, minBytes, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = part, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func fetchPart(t *testing.T, resp kmsg.Response) kmsg.FetchResponseTopicPartition {
	t.Helper()
	fr := resp.(*kmsg.FetchResponse)
	require.Zero(t, fr.ErrorCode)
	require.Len(t, fr.Topics, 1)
	require.Len(t, fr.Topics[0].Partitions, 1)
	return fr.Topics[0].Partitions[0]
}

// fetchValues reads every visible record from offset on, skipping records before it
// within the first batch as a client would.
func fetchValues(t *testing.T, h *harness, topic string, part int32, offset int64) []string {
	t.Helper()
	var out []string
	for range 1000 {
		p := fetchPart(t, h.do(fetchReq(topic, part, offset, 0, 1)))
		require.Zero(t, p.ErrorCode)
		if len(p.RecordBatches) == 0 {
			return out
		}
		err := batch.Split(p.RecordBatches, func(hd batch.Header, b []byte) error {
			kvs, err := batch.Records(b)
			require.NoError(t, err)
			for i, kv := range kvs {
				if hd.BaseOffset+int64(i) >= offset {
					out = append(out, string(kv.Value))
				}
			}
			offset = hd.NextOffset()
			return nil
		})
		require.NoError(t, err)
	}
	t.Fatal("fetch loop did not end")
	return nil
}

func TestFetchLongPollWakesOnData(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	id := h.send(fetchReq("t", 0, 0, 10_000, 1))
	h.settle()
	_, answered := h.reply(id)
	require.False(t, answered, "an empty fetch waits")
	h.do(produceReq(-1, "t", 0, values("hello")))
	resp, ok := h.reply(id)
	require.True(t, ok, "new data answers the waiting fetch")
	p := fetchPart(t, resp)
	require.Equal(t, int64(1), p.HighWatermark)
	require.Equal(t, int64(1), p.LastStableOffset)
	require.NotEmpty(t, p.RecordBatches)
}

func TestFetchLongPollTimesOutEmpty(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	id := h.send(fetchReq("t", 0, 0, 500, 1))
	h.advance(499 * time.Millisecond)
	_, answered := h.reply(id)
	require.False(t, answered)
	h.advance(2 * time.Millisecond)
	resp, ok := h.reply(id)
	require.True(t, ok)
	require.Empty(t, fetchPart(t, resp).RecordBatches)
}

func TestFetchMinBytesWaitsForEnough(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	id := h.send(fetchReq("t", 0, 0, 10_000, 500))
	h.do(produceReq(-1, "t", 0, values("small")))
	_, answered := h.reply(id)
	require.False(t, answered, "fewer than MinBytes keeps waiting")
	h.do(produceReq(-1, "t", 0, values(string(make([]byte, 600)))))
	_, answered = h.reply(id)
	require.True(t, answered)
}

func TestFetchDoesNotSeeUnsyncedData(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.holdSyncs = true
	h.send(produceReq(1, "t", 0, values("pending")))
	p := fetchPart(t, h.do(fetchReq("t", 0, 0, 0, 1)))
	require.Empty(t, p.RecordBatches)
	require.Equal(t, int64(0), p.HighWatermark)
	require.Zero(t, p.ErrorCode, "offset 0 is within [hwm, log end]: empty, not out of range")
}

func TestFetchErrorsAndClosedConnections(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.do(produceReq(-1, "t", 0, values("a")))
	require.Equal(t, kerr.OffsetOutOfRange.Code, fetchPart(t, h.do(fetchReq("t", 0, 5, 0, 1))).ErrorCode)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code,
		fetchPart(t, h.do(fetchReq("nope", 0, 0, 0, 1))).ErrorCode)

	sess := fetchReq("t", 0, 0, 0, 1)
	sess.SessionID, sess.SessionEpoch = 42, 3
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, h.do(sess).(*kmsg.FetchResponse).ErrorCode)

	h.sendOn(9, fetchReq("t", 0, 1, 10_000, 1))
	require.Equal(t, 1, h.b.fetches.count)
	h.step(ConnClosed{Conn: 9})
	require.Equal(t, 0, h.b.fetches.count, "a closed connection's fetch is dropped")
}

func TestFetchRespectsMaxBytesButReturnsOneBatch(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	for i := 0; i < 5; i++ {
		h.do(produceReq(-1, "t", 0, values(string(make([]byte, 100)))))
	}
	req := fetchReq("t", 0, 0, 0, 1)
	req.Topics[0].Partitions[0].PartitionMaxBytes = 10
	p := fetchPart(t, h.do(req))
	n := 0
	require.NoError(t, batch.Split(p.RecordBatches, func(batch.Header, []byte) error { n++; return nil }))
	require.Equal(t, 1, n, "one whole batch even beyond the limit, and no more")
}

func TestListOffsetsAndDeleteRecords(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	for i := 0; i < 3; i++ {
		b := batch.Build([]batch.KV{{Value: []byte("v")}}, batch.NoProducer, int64(1000*(i+1)))
		h.do(produceReq(-1, "t", 0, b))
	}
	list := func(ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = maxVersion(kmsg.ListOffsets)
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 0, ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return h.do(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	require.Equal(t, int64(0), list(-2).Offset)
	require.Equal(t, int64(3), list(-1).Offset)
	require.Equal(t, int64(1), list(1500).Offset)
	require.Equal(t, int64(-1), list(9999).Offset)
	maxTs := list(-3)
	require.Equal(t, int64(2), maxTs.Offset)
	require.Equal(t, int64(3000), maxTs.Timestamp)

	del := kmsg.NewPtrDeleteRecordsRequest()
	del.Version = maxVersion(kmsg.DeleteRecords)
	dt := kmsg.NewDeleteRecordsRequestTopic()
	dt.Topic = "t"
	dp := kmsg.NewDeleteRecordsRequestTopicPartition()
	dp.Partition, dp.Offset = 0, 2
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	dr := h.do(del).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
	require.Zero(t, dr.ErrorCode)
	require.Equal(t, int64(2), dr.LowWatermark)
	h.restart()
	require.Equal(t, int64(2), list(-2).Offset, "the log start offset is durable")
}

func TestRetentionRunsOnItsTimer(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetentionCheckIntervalMs = 1000 })
	h.env.batchesPerSegment = 1
	h.mustCreate("t", 1, "retention.bytes=1")
	for i := 0; i < 4; i++ {
		h.do(produceReq(-1, "t", 0, values("v")))
	}
	require.Equal(t, int64(0), h.b.replicas[tp("t", 0)].StartOffset())
	h.advance(1100 * time.Millisecond)
	require.Equal(t, int64(3), h.b.replicas[tp("t", 0)].StartOffset(),
		"all but the active segment are gone")
	require.Equal(t, []string{"v"}, fetchValues(t, h, "t", 0, 3))
}

func TestDrainAnswersParkedFetchesAtOnce(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	id := h.send(fetchReq("t", 0, 0, 30_000, 1))
	_, answered := h.reply(id)
	require.False(t, answered)
	h.step(Drain{})
	_, answered = h.reply(id)
	require.True(t, answered, "a draining node answers parked fetches now")
	id = h.send(fetchReq("t", 0, 0, 30_000, 1))
	_, answered = h.reply(id)
	require.True(t, answered, "and new fetches no longer wait")
}

// A fetch that parks while a batch written before it waits for its fsync is answered
// when that fsync makes the batch visible, not only when later writes arrive.
func TestFetchLongPollWakesWhenAnEarlierWriteBecomesVisible(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	h.holdSyncs = true
	h.send(produceReq(1, "t", 0, values("written before the fetch")))
	id := h.send(fetchReq("t", 0, 0, 10_000, 1))
	_, answered := h.reply(id)
	require.False(t, answered, "nothing is visible yet: the fetch waits")
	h.holdSyncs = false
	h.settle()
	resp, ok := h.reply(id)
	require.True(t, ok, "the fsync made the batch visible: the waiting fetch is answered")
	p := fetchPart(t, resp)
	require.Equal(t, int64(1), p.HighWatermark)
	require.NotEmpty(t, p.RecordBatches)
}
