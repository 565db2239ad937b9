package batch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBuildRoundTrip(t *testing.T) {
	kvs := []KV{{Key: []byte("k1"), Value: []byte("v1")}, {Value: make([]byte, 300)}}
	b := Build(kvs, Producer{ID: 7, Epoch: 1, BaseSequence: 10}, 1234)
	h, err := Check(b)
	require.NoError(t, err)
	require.Equal(t, int32(2), h.RecordCount)
	require.Equal(t, int64(7), h.ProducerID)
	require.Equal(t, int32(11), h.LastSequence())
	got, err := Records(b)
	require.NoError(t, err)
	require.Equal(t, "k1", string(got[0].Key))
	require.Equal(t, 300, len(got[1].Value))
	require.Nil(t, got[1].Key)
}

func TestCheckRejectsFlippedBit(t *testing.T) {
	b := Build([]KV{{Value: []byte("hello")}}, NoProducer, 1)
	for i := 21; i < len(b); i++ {
		c := append([]byte(nil), b...)
		c[i] ^= 0x40
		_, err := Check(c)
		require.Error(t, err, "flip at byte %d went unnoticed", i)
	}
}

func TestRewriteKeepsCRC(t *testing.T) {
	b := Build([]KV{{Value: []byte("x")}}, NoProducer, 1)
	SetBaseOffset(b, 99)
	SetLeaderEpoch(b, 3)
	h, err := Check(b)
	require.NoError(t, err)
	require.Equal(t, int64(99), h.BaseOffset)
	SetLogAppendTime(b, 555)
	h, err = Check(b)
	require.NoError(t, err)
	require.Equal(t, int64(555), h.MaxTimestamp)
}

func TestSplitTruncated(t *testing.T) {
	b := Build([]KV{{Value: []byte("x")}}, NoProducer, 1)
	two := append(append([]byte(nil), b...), b...)
	n := 0
	require.NoError(t, Split(two, func(Header, []byte) error { n++; return nil }))
	require.Equal(t, 2, n)
	require.Error(t, Split(two[:len(two)-1], func(Header, []byte) error { return nil }))
}

func FuzzCheck(f *testing.F) {
	f.Add(Build([]KV{{Key: []byte("a"), Value: []byte("b")}}, NoProducer, 1))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Check(b)
		if err == nil {
			require.Equal(t, len(b), h.Size())
			require.Equal(t, h.CRC, ComputeCRC(b))
		}
		_ = Split(b, func(Header, []byte) error { return nil })
		_, _ = Records(b)
	})
}
