package compress

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/batch"
)

// codec is one way a producer may compress a batch's records.
type codec struct {
	name string
	id   int
	comp func([]byte) ([]byte, error)
}

func viaWriter(mk func(w *bytes.Buffer) (io.WriteCloser, error)) func([]byte) ([]byte, error) {
	return func(b []byte) ([]byte, error) {
		var buf bytes.Buffer
		w, err := mk(&buf)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
}

var codecs = []codec{
	{"gzip", batch.CompressionGzip, viaWriter(func(w *bytes.Buffer) (io.WriteCloser, error) {
		return gzip.NewWriter(w), nil
	})},
	{"snappy-raw", batch.CompressionSnappy, func(b []byte) ([]byte, error) {
		return snappy.Encode(nil, b), nil
	}},
	{"snappy-xerial", batch.CompressionSnappy, func(b []byte) ([]byte, error) {
		return xerial.Encode(nil, b), nil
	}},
	{"lz4", batch.CompressionLz4, viaWriter(func(w *bytes.Buffer) (io.WriteCloser, error) {
		return lz4.NewWriter(w), nil
	})},
	{"zstd", batch.CompressionZstd, viaWriter(func(w *bytes.Buffer) (io.WriteCloser, error) {
		return zstd.NewWriter(w)
	})},
}

func TestWalkCompressedBatches(t *testing.T) {
	recs := make([]batch.TimedKV, 50)
	want := make([]batch.RecordTime, 50)
	for i := range recs {
		ts := int64(1_000_000 + (i*37)%50*10) // out of order, as producers may send
		recs[i] = batch.TimedKV{Value: []byte(fmt.Sprintf("value %d", i)), TimestampMs: ts}
		want[i] = batch.RecordTime{Offset: 100 + int64(i), Timestamp: ts}
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			b, err := batch.BuildTimed(recs, c.id, c.comp)
			require.NoError(t, err)
			batch.SetBaseOffset(b, 100)
			var got []batch.RecordTime
			require.NoError(t, batch.WalkTimestamps(b, Codecs{}, 1<<20, func(rt batch.RecordTime) bool {
				got = append(got, rt)
				return true
			}))
			require.Equal(t, want, got)
		})
	}
}

// A small payload that inflates past the limit is refused with ErrDecompressedTooLarge,
// whichever codec carries it; the same payload passes with a large enough limit.
func TestZipBombIsRefused(t *testing.T) {
	zeros := make([]byte, 8<<20)
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			src, err := c.comp(zeros)
			require.NoError(t, err)
			require.Less(t, len(src), len(zeros)/10, "the payload really is a bomb")
			_, err = Codecs{}.Decompress(int8(c.id), src, 1<<20)
			require.ErrorIs(t, err, batch.ErrDecompressedTooLarge)
			out, err := Codecs{}.Decompress(int8(c.id), src, len(zeros))
			require.NoError(t, err)
			require.Equal(t, len(zeros), len(out))
		})
	}
}

func TestCorruptPayloadsFailWithoutPanic(t *testing.T) {
	plain := bytes.Repeat([]byte("some records, some records "), 100)
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			src, err := c.comp(plain)
			require.NoError(t, err)
			_, err = Codecs{}.Decompress(int8(c.id), src[:len(src)/2], 1<<20)
			require.Error(t, err, "a truncated payload is an error")
			rapid.Check(t, func(t *rapid.T) {
				b := append([]byte(nil), src...)
				for _, i := range rapid.SliceOfN(rapid.IntRange(0, len(b)-1), 1, 8).Draw(t, "flips") {
					b[i] ^= 0x5a
				}
				out, err := Codecs{}.Decompress(int8(c.id), b, 4096)
				if err == nil && len(out) > 4096 {
					t.Fatalf("%d bytes past the limit", len(out))
				}
			})
		})
	}
	_, err := Codecs{}.Decompress(9, []byte("x"), 10)
	require.ErrorIs(t, err, ErrUnknownCodec)
	_, err = Codecs{}.Decompress(batch.CompressionSnappy, []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 1}, 10)
	require.Error(t, err, "a truncated xerial header")
}
