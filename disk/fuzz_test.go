package disk

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// fuzzSegment builds a valid segment of a few batches starting at offset 0.
func fuzzSegment() []byte {
	var seg []byte
	next := int64(0)
	for i := 0; i < 4; i++ {
		h, b := testBatch(next, 1+i, 10*i, int64(100+i))
		seg = append(seg, b...)
		next = h.NextOffset()
	}
	return seg
}

// FuzzRecovery writes arbitrary bytes as a segment file (optionally behind a valid
// prefix) and opens the log: recovery must not panic and must keep only whole, valid,
// contiguous batches, which the log then serves.
func FuzzRecovery(f *testing.F) {
	good := fuzzSegment()
	f.Add([]byte{}, false)
	f.Add(good, false)
	f.Add(good[:len(good)-5], false)
	f.Add(good[:70], true)
	garbled := append([]byte(nil), good...)
	garbled[100] ^= 0x40
	f.Add(garbled, false)
	f.Add(make([]byte, 200), true)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 2}, false)

	f.Fuzz(func(t *testing.T, data []byte, afterValid bool) {
		if afterValid {
			data = append(fuzzSegment(), data...)
		}
		m := NewMemFS()
		require.NoError(t, m.MkdirAll("d"))
		require.NoError(t, m.WriteFile(segmentFile("d", 0, logSuffix), data))
		cfg := replica.SegmentConfig{IndexInterval: 64}
		l, err := OpenPartitionLog(m, "d", NewMemState(), "p/", cfg, 0, zap.NewNop())
		require.NoError(t, err)
		defer l.Close()

		// The file now holds exactly the accepted batches, each valid and contiguous
		// from the log start on; below it may sit a corrupt batch recovery skipped
		// (corruption at rest, rot.go), which no read reaches.
		kept, err := m.ReadFile(segmentFile("d", 0, logSuffix))
		require.NoError(t, err)
		next, start := int64(0), l.StartOffset()
		for rest := kept; len(rest) > 0; {
			h, err := batch.ParseHeader(rest)
			require.NoError(t, err)
			require.LessOrEqual(t, h.Size(), len(rest))
			if h.BaseOffset >= start || next >= start {
				_, err = batch.Check(rest[:h.Size()])
				require.NoError(t, err)
				require.Equal(t, next, h.BaseOffset)
			}
			next = max(h.NextOffset(), next)
			if next < start && len(rest) > h.Size() {
				if nh, err := batch.ParseHeader(rest[h.Size():]); err == nil && nh.BaseOffset == start {
					next = start
				}
			}
			rest = rest[h.Size():]
		}
		require.Equal(t, next, l.EndOffset())
		if afterValid {
			require.GreaterOrEqual(t, len(kept), len(fuzzSegment()), "a valid prefix is kept")
		}
		for off := l.StartOffset(); off < l.EndOffset(); {
			b, err := l.Read(off, 1<<20, l.EndOffset())
			require.NoError(t, err)
			require.NotEmpty(t, b)
			require.NoError(t, batch.Split(b, func(h batch.Header, _ []byte) error {
				off = h.NextOffset()
				return nil
			}))
		}
	})
}
