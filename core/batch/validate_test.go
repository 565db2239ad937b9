package batch_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/batch/batchtest"
)

const now = int64(1_767_225_600_000) // 2026-01-01

// policy is a topic with Kafka 4's defaults: any age, at most an hour ahead.
func policy() *batch.Policy {
	return &batch.Policy{NowMs: now, TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs: 3_600_000, Decompressor: compress.Codecs{}}
}

// codec is one way a producer compresses a batch's records.
type codec struct {
	name string
	id   int
	comp func([]byte) ([]byte, error)
}

func viaWriter(mk func(w io.Writer) io.WriteCloser) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		var buf bytes.Buffer
		w := mk(&buf)
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
		err := w.Close()
		return buf.Bytes(), err
	}
}

var codecs = []codec{
	{"none", batch.CompressionNone, nil},
	{"gzip", batch.CompressionGzip, viaWriter(func(w io.Writer) io.WriteCloser {
		return gzip.NewWriter(w)
	})},
	{"snappy", batch.CompressionSnappy, func(b []byte) ([]byte, error) {
		return snappy.Encode(nil, b), nil
	}},
	{"snappy-xerial", batch.CompressionSnappy, func(b []byte) ([]byte, error) {
		return xerial.Encode(nil, b), nil
	}},
	{"lz4", batch.CompressionLz4, viaWriter(func(w io.Writer) io.WriteCloser {
		return lz4.NewWriter(w)
	})},
	{"zstd", batch.CompressionZstd, viaWriter(func(w io.Writer) io.WriteCloser {
		z, _ := zstd.NewWriter(w)
		return z
	})},
}

// franzDecode decodes b as a franz-go consumer would: the batch with
// kmsg.RecordBatch.ReadFrom, the records section inflated with franz-go's own
// decompressor, then each record with kmsg.Record.ReadFrom. It returns the records.
func franzDecode(b []byte) ([]kmsg.Record, error) {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("RecordBatch.ReadFrom: %w", err)
	}
	recs := rb.Records
	if c := rb.Attributes & 7; c != 0 {
		var err error
		recs, err = kgo.DefaultDecompressor().Decompress(recs, kgo.CompressionCodecType(c))
		if err != nil {
			return nil, fmt.Errorf("decompress codec %d: %w", c, err)
		}
	}
	var out []kmsg.Record
	for len(recs) > 0 {
		length, n := binary.Varint(recs)
		if n <= 0 || length < 0 || int64(len(recs)-n) < length {
			return nil, fmt.Errorf("record %d: bad length", len(out))
		}
		var r kmsg.Record
		if err := r.ReadFrom(recs[:n+int(length)]); err != nil {
			return nil, fmt.Errorf("record %d: %w", len(out), err)
		}
		if r.OffsetDelta != int32(len(out)) {
			return nil, fmt.Errorf("record %d: offset delta %d", len(out), r.OffsetDelta)
		}
		out = append(out, r)
		recs = recs[n+int(length):]
	}
	if int32(len(out)) != rb.NumRecords || rb.LastOffsetDelta != rb.NumRecords-1 {
		return nil, fmt.Errorf("%d records, header says %d (last delta %d)", len(out),
			rb.NumRecords, rb.LastOffsetDelta)
	}
	return out, nil
}

func TestValidateAcceptsWhatClientsBuild(t *testing.T) {
	recs := []batch.TimedKV{{Key: []byte("k"), Value: []byte("v"), TimestampMs: now - 5},
		{Value: nil, TimestampMs: now + 7}, {Key: []byte{}, Value: make([]byte, 3000),
			TimestampMs: now}}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			b, err := batch.BuildTimed(recs, c.id, c.comp)
			require.NoError(t, err)
			s, err := batch.Validate(b, policy())
			require.NoError(t, err)
			require.Equal(t, now+7, s.MaxTimestamp)
			require.Equal(t, int32(3), s.Header.RecordCount)
			_, err = batch.CheckRecords(b, compress.Codecs{}, 0)
			require.NoError(t, err)
		})
	}
	withHeaders := batchtest.Assemble(batchtest.Plain(2, now), append(
		batchtest.Encode(kmsg.Record{Headers: []kmsg.Header{{Key: "a", Value: nil},
			{Key: "", Value: []byte("x")}}}),
		batchtest.Encode(kmsg.Record{OffsetDelta: 1, TimestampDelta64: -3})...))
	s, err := batch.Validate(withHeaders, policy())
	require.NoError(t, err)
	require.Equal(t, now, s.MaxTimestamp)
	_, err = franzDecode(withHeaders)
	require.NoError(t, err)
}

// Every malformed case passes the header checks (its CRC holds) and is refused with
// its code; franz-go cannot decode the ones it is handed either, or decodes them into
// something other than the header promises.
func TestValidateRefusesMalformedBatches(t *testing.T) {
	for _, c := range batchtest.Malformed(now) {
		t.Run(c.Name, func(t *testing.T) {
			_, err := batch.Check(c.Batch)
			require.NoError(t, err, "the header and CRC are fine")
			_, err = batch.Validate(c.Batch, policy())
			require.Error(t, err)
			require.Equal(t, kerr.ErrorForCode(c.Code), kerr.ErrorForCode(batch.ErrorCode(err)),
				"refused with %v", err)
			var re *batch.RecordsError
			require.ErrorAs(t, err, &re)
			require.Equal(t, c.PerRecord, len(re.Records) > 0, "per-record errors: %v", re.Records)
		})
	}
}

func TestValidateTimestampWindow(t *testing.T) {
	one := func(ts int64) []byte {
		return batch.Build([]batch.KV{{Value: []byte("x")}}, batch.NoProducer, ts)
	}
	p := policy()
	p.TimestampBeforeMaxMs = 1000
	for _, c := range []struct {
		ts int64
		ok bool
	}{{now, true}, {now - 1000, true}, {now - 1001, false}, {now + 3_600_000, true},
		{now + 3_600_001, false}, {batch.NoTimestamp, true}, {math.MinInt64, false},
		{math.MaxInt64, false}} {
		_, err := batch.Validate(one(c.ts), p)
		require.Equal(t, c.ok, err == nil, "timestamp %d: %v", c.ts, err)
		if !c.ok {
			require.Equal(t, kerr.InvalidTimestamp.Code, batch.ErrorCode(err))
		}
	}
	p.LogAppendTime = true // the broker stamps the batch: client timestamps do not matter
	_, err := batch.Validate(one(now+10*3_600_000), p)
	require.NoError(t, err)
	wide := policy()
	wide.TimestampAfterMaxMs = math.MaxInt64
	for _, ts := range []int64{math.MinInt64, math.MaxInt64} {
		_, err := batch.Validate(one(ts), wide)
		require.NoError(t, err, "with no bound, timestamp %d passes", ts)
	}
}

// Every record outside the window is named, as Kafka does, not just the first.
func TestValidateNamesEveryLateRecord(t *testing.T) {
	var body []byte
	for i := 0; i < 5; i++ {
		ahead := int64(0)
		if i%2 == 1 {
			ahead = 2 * 3_600_000
		}
		body = append(body, batchtest.Record(int32(i), ahead, nil)...)
	}
	_, err := batch.Validate(batchtest.Assemble(batchtest.Plain(5, now), body), policy())
	var re *batch.RecordsError
	require.ErrorAs(t, err, &re)
	require.Equal(t, 2, re.Faulty)
	require.Equal(t, []int32{1, 3}, []int32{re.Records[0].Index, re.Records[1].Index})
}

func TestValidateBoundsInflation(t *testing.T) {
	zeros := make([]byte, 2<<20)
	comp, err := codecs[1].comp(append(batchtest.Record(0, 0, zeros), nil...))
	require.NoError(t, err)
	h := batchtest.Plain(1, now)
	h.Attributes = batch.CompressionGzip
	b := batchtest.Assemble(h, comp)
	p := policy()
	p.MaxDecompressedBytes = 1 << 20
	_, err = batch.Validate(b, p)
	require.ErrorIs(t, err, batch.ErrDecompressedTooLarge)
	require.Equal(t, kerr.MessageTooLarge.Code, batch.ErrorCode(err))
	p.Decompressor = sliceOnly{}
	_, err = batch.Validate(b, p)
	require.ErrorIs(t, err, batch.ErrDecompressedTooLarge, "inflated whole, too")
	p.MaxDecompressedBytes = 4 << 20
	_, err = batch.Validate(b, p)
	require.NoError(t, err)
	p.Decompressor = compress.Codecs{}
	_, err = batch.Validate(b, p)
	require.NoError(t, err)
	p.Decompressor = nil
	_, err = batch.Validate(b, p)
	require.Equal(t, kerr.UnsupportedCompressionType.Code, batch.ErrorCode(err))
}

func TestValidateDoesNotAllocateForUncompressedBatches(t *testing.T) {
	b := benchBatch(t, 100, 1024, codecs[0])
	p := policy()
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := batch.Validate(b, p); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// benchBatch is n records of size-byte values, half-compressible (16 letters).
func benchBatch(tb testing.TB, n, size int, c codec) []byte {
	recs := make([]batch.TimedKV, n)
	x := uint32(1)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			x = x*1664525 + 1013904223
			v[j] = 'a' + byte(x>>28)
		}
		recs[i] = batch.TimedKV{Key: []byte(fmt.Sprint(i)), Value: v, TimestampMs: now}
	}
	b, err := batch.BuildTimed(recs, c.id, c.comp)
	require.NoError(tb, err)
	return b
}

// BenchmarkValidate measures validation of a 100-record batch of 1 KiB values, per
// codec; MB/s counts the batch's bytes as produced (compressed when it is).
func BenchmarkValidate(b *testing.B) {
	for _, c := range codecs {
		b.Run(c.name, func(b *testing.B) {
			bt := benchBatch(b, 100, 1024, c)
			p := policy()
			b.SetBytes(int64(len(bt)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := batch.Validate(bt, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheck is the header-only check produce did before validation, for
// comparison.
func BenchmarkCheck(b *testing.B) {
	bt := benchBatch(b, 100, 1024, codecs[0])
	b.SetBytes(int64(len(bt)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := batch.Check(bt); err != nil {
			b.Fatal(err)
		}
	}
}
