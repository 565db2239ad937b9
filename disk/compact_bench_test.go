package disk

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// BenchmarkCleanOSFS measures the cleaner on the real filesystem: 16 MiB of 100-byte
// values over 1,000 keys in 1 MiB segments (so about 94 % of the records go), batches
// of 10 records, cleaned once. The reported MB/s is segment bytes read per second.
func BenchmarkCleanOSFS(b *testing.B) {
	for _, codec := range []int{batch.CompressionNone, batch.CompressionLz4} {
		b.Run(fmt.Sprintf("codec=%d", codec), func(b *testing.B) { benchClean(b, codec) })
	}
}

func benchClean(b *testing.B, codec int) {
	const total, keys, per = 16 << 20, 1000, 10
	val := make([]byte, 100)
	var read int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir() + "/p"
		l, err := OpenPartitionLog(OSFS{}, dir, NewMemState(), "p/",
			replica.SegmentConfig{SegmentBytes: 1 << 20}, 0, zap.NewNop())
		require.NoError(b, err)
		n := 0
		for size := 0; size < total; {
			recs := make([]batch.TimedKV, per)
			for j := range recs {
				recs[j] = batch.TimedKV{Key: fmt.Appendf(nil, "key-%d", n%keys), Value: val}
				n++
			}
			bb, err := batch.BuildTimed(recs, codec, func(src []byte) ([]byte, error) {
				return compress.Codecs{}.Compress(int8(codec), src)
			})
			require.NoError(b, err)
			batch.SetBaseOffset(bb, l.EndOffset())
			h, err := batch.Check(bb)
			require.NoError(b, err)
			require.NoError(b, l.Append(0, h, bb))
			size += len(bb)
		}
		require.NoError(b, l.Sync())
		segs := l.Segments()
		req := replica.CleanRequest{UpTo: segs[len(segs)-2].EndOffset, NowMs: 0,
			DeleteRetentionMs: 1 << 40, KeyMapBytes: 32 << 20}
		b.StartTimer()
		res, err := l.CleanWith(req, CleanOptions{Codec: compress.Codecs{}})
		require.NoError(b, err)
		read += res.BytesRead
		b.StopTimer()
		require.NoError(b, l.Close())
		b.StartTimer()
	}
	b.SetBytes(read / int64(b.N))
}
