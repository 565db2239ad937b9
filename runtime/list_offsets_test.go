package runtime_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
)

// listOffsetsBase is the timestamp the test records count from (late 2023).
const listOffsetsBase = int64(1_700_000_000_000)

// recordTimes are the test records' timestamps, relative to listOffsetsBase, in offset
// order: out of order, as producers may send them, with a tie at the maximum.
var recordTimes = []int64{500, 100, 900, 300, 950, 700, 950, 200}

// firstAtOrAfter is the answer Kafka gives for a lookup of base+rel: the first record,
// in offset order, whose timestamp is at or after it.
func firstAtOrAfter(rel int64) (int64, int64) {
	for i, ts := range recordTimes {
		if ts >= rel {
			return int64(i), listOffsetsBase + ts
		}
	}
	return -1, -1
}

// Producers built by kgo with each codec: ListOffsetsAfterMilli finds the exact record
// inside the compressed batch, with its own timestamp.
func TestNodeListOffsetsByTimeIsExactInsideCompressedBatches(t *testing.T) {
	n := startNode(t, "")
	codecs := []struct {
		name string
		id   int
		c    kgo.CompressionCodec
	}{
		{"none", batch.CompressionNone, kgo.NoCompression()},
		{"gzip", batch.CompressionGzip, kgo.GzipCompression()},
		{"snappy", batch.CompressionSnappy, kgo.SnappyCompression()},
		{"lz4", batch.CompressionLz4, kgo.Lz4Compression()},
		{"zstd", batch.CompressionZstd, kgo.ZstdCompression()},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "times-" + c.name
			cl := newClient(t, n, kgo.ProducerBatchCompression(c.c),
				kgo.ProducerLinger(500*time.Millisecond), kgo.DefaultProduceTopic(topic))
			createTopic(t, cl, topic, 1)
			ctx := testCtx(t, 20*time.Second)
			recs := make([]*kgo.Record, len(recordTimes))
			for i, ts := range recordTimes {
				recs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("%d %s", i, strings.Repeat("x", 300))),
					Timestamp: time.UnixMilli(listOffsetsBase + ts)}
			}
			require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
			requireOneBatch(t, cl, topic, c.id)

			adm := kadm.NewClient(cl)
			for _, rel := range []int64{0, 100, 101, 500, 501, 901, 950, 951} {
				listed, err := adm.ListOffsetsAfterMilli(ctx, listOffsetsBase+rel, topic)
				require.NoError(t, err)
				got, ok := listed.Lookup(topic, 0)
				require.True(t, ok)
				require.NoError(t, got.Err)
				wantOff, wantTs := firstAtOrAfter(rel)
				if wantOff < 0 {
					// kadm turns "no such record" into the end offset.
					wantOff = int64(len(recordTimes))
				}
				require.Equal(t, wantOff, got.Offset, "after base+%d", rel)
				if wantTs >= 0 {
					require.Equal(t, wantTs, got.Timestamp, "after base+%d", rel)
				}
			}
			off, ts := listMaxTimestamp(t, cl, topic)
			require.Equal(t, [2]int64{4, listOffsetsBase + 950}, [2]int64{off, ts},
				"MAX_TIMESTAMP: the earlier of the two records at the maximum")

			// DeleteRecords inside the batch: records below the start are never answered.
			deleteRecordsBefore(t, adm, topic, 5)
			listed, err := adm.ListOffsetsAfterMilli(ctx, listOffsetsBase+901, topic)
			require.NoError(t, err)
			got, _ := listed.Lookup(topic, 0)
			require.Equal(t, [2]int64{6, listOffsetsBase + 950}, [2]int64{got.Offset, got.Timestamp})
			deleteRecordsBefore(t, adm, topic, 7)
			off, ts = listMaxTimestamp(t, cl, topic)
			require.Equal(t, [2]int64{7, listOffsetsBase + 200}, [2]int64{off, ts},
				"MAX_TIMESTAMP among the records left")
		})
	}
}

// requireOneBatch fetches the partition raw and checks that the records went as one
// batch with the codec asked for, so the lookups above really looked inside it.
func requireOneBatch(t *testing.T, cl *kgo.Client, topic string, codec int) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MaxBytes = 11, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	require.NoError(t, err)
	p := resp.Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode)
	var hs []batch.Header
	require.NoError(t, batch.Split(p.RecordBatches, func(h batch.Header, _ []byte) error {
		hs = append(hs, h)
		return nil
	}))
	require.Len(t, hs, 1, "kgo sent the records as one batch")
	require.Equal(t, codec, hs[0].Compression())
	require.Equal(t, int32(len(recordTimes)), hs[0].RecordCount)
}

// listMaxTimestamp asks ListOffsets v7 for MAX_TIMESTAMP (-3), which kadm does not wrap.
func listMaxTimestamp(t *testing.T, cl *kgo.Client, topic string) (int64, int64) {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -3
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t, 10*time.Second), cl)
	require.NoError(t, err)
	p := resp.Topics[0].Partitions[0]
	require.Zero(t, p.ErrorCode)
	return p.Offset, p.Timestamp
}

func deleteRecordsBefore(t *testing.T, adm *kadm.Client, topic string, offset int64) {
	t.Helper()
	os := make(kadm.Offsets)
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset})
	resp, err := adm.DeleteRecords(testCtx(t, 10*time.Second), os)
	require.NoError(t, err)
	r, ok := resp.Lookup(topic, 0)
	require.True(t, ok)
	require.NoError(t, r.Err)
	require.Equal(t, offset, r.LowWatermark)
}
