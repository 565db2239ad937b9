package disk

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// benchBatches prebuilds n batches of 16 records of 1 KiB each, offsets assigned.
func benchBatches(n int) ([]batch.Header, [][]byte) {
	hs, bs := make([]batch.Header, n), make([][]byte, n)
	for i := range bs {
		hs[i], bs[i] = testBatch(int64(i*16), 16, 1024, int64(i))
	}
	return hs, bs
}

func benchAppend(b *testing.B, fsys FS, dir string, syncEvery int) {
	const n = 1024
	hs, bs := benchBatches(n)
	cfg := replica.SegmentConfig{SegmentBytes: 64 << 20}
	l, err := OpenPartitionLog(fsys, dir, NewMemState(), "p/", cfg, 0, zap.NewNop())
	require.NoError(b, err)
	defer l.Close()
	b.SetBytes(int64(len(bs[0])))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, one := hs[i%n], bs[i%n]
		h.BaseOffset = l.EndOffset()
		batch.SetBaseOffset(one, h.BaseOffset)
		if err := l.Append(0, h, one); err != nil {
			b.Fatal(err)
		}
		if syncEvery > 0 && i%syncEvery == syncEvery-1 {
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkAppendOSFS(b *testing.B)            { benchAppend(b, OSFS{}, b.TempDir()+"/p", 0) }
func BenchmarkAppendOSFSSyncEvery64(b *testing.B) { benchAppend(b, OSFS{}, b.TempDir()+"/p", 64) }
func BenchmarkAppendMemFS(b *testing.B)           { benchAppend(b, NewMemFS(), "p", 0) }

// Through the handle cache the runtime uses: the fast path must cost about the same.
func BenchmarkAppendOSFSCached(b *testing.B) {
	benchAppend(b, NewFileCache(OSFS{}, 64), b.TempDir()+"/p", 0)
}

func BenchmarkReadOSFS(b *testing.B) {
	const n = 2048
	hs, bs := benchBatches(n)
	dir := b.TempDir() + "/p"
	l, err := OpenPartitionLog(OSFS{}, dir, NewMemState(), "p/", replica.SegmentConfig{}, 0,
		zap.NewNop())
	require.NoError(b, err)
	defer l.Close()
	for i := range bs {
		require.NoError(b, l.Append(0, hs[i], bs[i]))
	}
	end := l.EndOffset()
	b.SetBytes(int64(4 * len(bs[0])))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := int64((i * 7919 % n) * 16)
		got, err := l.Read(off, 4*len(bs[0]), end)
		if err != nil || len(got) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyServed is the check every Read runs on what it returns (rot.go): four
// 16 KiB batches, as in BenchmarkReadOSFS.
func BenchmarkVerifyServed(b *testing.B) {
	_, bs := benchBatches(4)
	var buf []byte
	for _, one := range bs {
		buf = append(buf, one...)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := verifyServed(buf, 0, 64); err != nil {
			b.Fatal(err)
		}
	}
}
