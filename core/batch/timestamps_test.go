package batch

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// reverseCodec is a stand-in codec for core tests: "compressing" reverses the bytes.
// The real codecs are tested in package compress.
type reverseCodec struct{ out []byte } // out, when set, is returned instead

func (r reverseCodec) Decompress(codec int8, src []byte, limit int) ([]byte, error) {
	if r.out != nil {
		return r.out, nil
	}
	if codec != CompressionGzip {
		return nil, errors.New("unknown codec")
	}
	out := slices.Clone(src)
	slices.Reverse(out)
	return out, nil
}

func reverse(b []byte) ([]byte, error) {
	out := slices.Clone(b)
	slices.Reverse(out)
	return out, nil
}

func timed(ts ...int64) []TimedKV {
	out := make([]TimedKV, len(ts))
	for i, t := range ts {
		out[i] = TimedKV{Value: []byte{byte(i)}, TimestampMs: t}
	}
	return out
}

func walkAll(t *testing.T, b []byte, dec Decompressor) []RecordTime {
	t.Helper()
	var got []RecordTime
	require.NoError(t, WalkTimestamps(b, dec, 1<<20, func(rt RecordTime) bool {
		got = append(got, rt)
		return true
	}))
	return got
}

func TestWalkTimestampsUncompressed(t *testing.T) {
	b, err := BuildTimed(timed(1000, 900, 1300, 1200), CompressionNone, nil)
	require.NoError(t, err)
	SetBaseOffset(b, 40)
	h, err := Check(b)
	require.NoError(t, err)
	require.Equal(t, int64(1300), h.MaxTimestamp)
	require.Equal(t, []RecordTime{{40, 1000}, {41, 900}, {42, 1300}, {43, 1200}},
		walkAll(t, b, nil))
}

func TestWalkTimestampsStopsWhenAsked(t *testing.T) {
	b, err := BuildTimed(timed(1, 2, 3), CompressionNone, nil)
	require.NoError(t, err)
	n := 0
	require.NoError(t, WalkTimestamps(b, nil, 1<<20, func(RecordTime) bool { n++; return n < 2 }))
	require.Equal(t, 2, n)
}

func TestWalkTimestampsLogAppendTime(t *testing.T) {
	b, err := BuildTimed(timed(5, 7, 6), CompressionNone, nil)
	require.NoError(t, err)
	SetLogAppendTime(b, 9999)
	require.Equal(t, []RecordTime{{0, 9999}, {1, 9999}, {2, 9999}}, walkAll(t, b, nil),
		"under LogAppendTime every record has the batch's max timestamp")
}

func TestWalkTimestampsCompressedThroughDecompressor(t *testing.T) {
	b, err := BuildTimed(timed(10, 30, 20), CompressionGzip, reverse)
	require.NoError(t, err)
	require.Equal(t, []RecordTime{{0, 10}, {1, 30}, {2, 20}}, walkAll(t, b, reverseCodec{}))
	err = WalkTimestamps(b, nil, 1<<20, func(RecordTime) bool { return true })
	require.ErrorIs(t, err, ErrNoDecompressor)
}

func TestWalkTimestampsEnforcesLimit(t *testing.T) {
	b, err := BuildTimed(timed(10, 30), CompressionGzip, reverse)
	require.NoError(t, err)
	// A decompressor that ignores the limit is still caught.
	big := reverseCodec{out: make([]byte, 100)}
	err = WalkTimestamps(b, big, 99, func(RecordTime) bool { return true })
	require.ErrorIs(t, err, ErrDecompressedTooLarge)
}

func TestWalkTimestampsRejectsOffsetDeltaPastBatch(t *testing.T) {
	three, err := BuildTimed(timed(1, 2, 3), CompressionNone, nil)
	require.NoError(t, err)
	recs := three[HeaderSize:]
	_, _, n0, err := recordTimes(recs)
	require.NoError(t, err)
	_, _, n1, err := recordTimes(recs[n0:])
	require.NoError(t, err)
	// A one-record batch (lastOffsetDelta 0) whose record says offset delta 2.
	one, err := BuildTimed(timed(1), CompressionGzip, reverse)
	require.NoError(t, err)
	err = WalkTimestamps(one, reverseCodec{out: recs[n0+n1:]}, 1<<20,
		func(RecordTime) bool { return true })
	require.ErrorIs(t, err, ErrBadRecord)
}

// Whatever bytes a decompressor hands back, the walk returns an error or walks; it
// never panics or loops past the record count.
func TestWalkTimestampsArbitraryRecordBytes(t *testing.T) {
	hdr, err := BuildTimed(timed(1, 2, 3, 4), CompressionGzip, reverse)
	require.NoError(t, err)
	rapid.Check(t, func(t *rapid.T) {
		body := rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "body")
		n := 0
		_ = WalkTimestamps(hdr, reverseCodec{out: body}, 1<<20, func(RecordTime) bool {
			n++
			return true
		})
		if n > 4 {
			t.Fatalf("walked %d records of a 4-record batch", n)
		}
	})
}
