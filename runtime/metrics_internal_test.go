package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The error label is a response's top-level error first, then the first of its
// topics and partitions in order; NONE when there is none.
func TestResponseErrorIsTheFirstCode(t *testing.T) {
	oc := kmsg.NewPtrOffsetCommitResponse()
	ot := kmsg.NewOffsetCommitResponseTopic()
	for _, code := range []int16{0, 25, 3} {
		p := kmsg.NewOffsetCommitResponseTopicPartition()
		p.ErrorCode = code
		ot.Partitions = append(ot.Partitions, p)
	}
	oc.Topics = append(oc.Topics, ot)
	require.EqualValues(t, 25, responseError(oc), "found by walking the response")

	f := kmsg.NewPtrFetchResponse()
	ft := kmsg.NewFetchResponseTopic()
	fp := kmsg.NewFetchResponseTopicPartition()
	fp.ErrorCode = 1
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	require.EqualValues(t, 1, responseError(f))
	f.ErrorCode = 71
	require.EqualValues(t, 71, responseError(f), "the top-level code comes first")

	require.Zero(t, responseError(kmsg.NewPtrProduceResponse()))
	require.Zero(t, responseError(nil), "acks=0: no response")
	require.Equal(t, "NONE", errorName(0))
	require.Equal(t, "UNKNOWN_TOPIC_OR_PARTITION", errorName(3))
	require.Equal(t, "CODE_-999", errorName(-999))
	require.Equal(t, "Produce", apiName(0))
	require.Equal(t, "Unknown9999", apiName(9999))
}

// countRecords adds the batches' record counts and stops at a torn batch.
func TestCountRecordsStopsAtATornBatch(t *testing.T) {
	one := func(records int32) []byte {
		b := make([]byte, 61+10)
		b[11] = byte(len(b) - 12) // batchLength
		b[16] = 2                 // magic
		b[60] = byte(records)
		return b
	}
	b := append(one(3), one(4)...)
	require.EqualValues(t, 7, countRecords(b))
	require.EqualValues(t, 3, countRecords(b[:len(b)-1]))
	require.Zero(t, countRecords(nil))
}

// BenchmarkRequestDone is the observer's cost per answered Produce.
func BenchmarkRequestDone(b *testing.B) {
	m := newRequestMetrics()
	resp := kmsg.NewPtrProduceResponse()
	rt := kmsg.NewProduceResponseTopic()
	rt.Partitions = append(rt.Partitions, kmsg.NewProduceResponseTopicPartition())
	resp.Topics = append(resp.Topics, rt)
	for b.Loop() {
		m.RequestDone(0, 11, resp, time.Millisecond)
	}
}
