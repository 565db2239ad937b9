package disk

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// readAll returns every batch from the start offset to the end, checked.
func readAll(t testing.TB, l *PartitionLog) [][]byte {
	t.Helper()
	var out [][]byte
	for off := l.StartOffset(); off < l.EndOffset(); {
		b, err := l.Read(off, 1<<20, l.EndOffset())
		require.NoError(t, err)
		require.NotEmpty(t, b)
		require.NoError(t, batch.Split(b, func(h batch.Header, one []byte) error {
			out = append(out, append([]byte(nil), one...))
			off = h.NextOffset()
			return nil
		}))
	}
	return out
}

func TestRecoveryNeverLosesASyncedBatch(t *testing.T) {
	cfg := replica.SegmentConfig{SegmentBytes: 1500, IndexInterval: 200}
	for seed := int64(0); seed < 300; seed++ {
		r := rand.New(rand.NewSource(seed))
		m, st := NewMemFS(), NewMemState()
		l := openTestLog(t, m, st, cfg)
		var written [][]byte
		synced := 0
		for i, n := 0, 5+r.Intn(40); i < n; i++ {
			written = append(written, appendBatch(t, l, 1000, 1+r.Intn(3), r.Intn(120), int64(i)))
			if r.Intn(4) == 0 {
				require.NoError(t, l.Sync())
				synced = len(written)
			}
		}
		m.Crash(r)
		l = openTestLog(t, m, st, cfg)
		got := readAll(t, l)
		require.GreaterOrEqual(t, len(got), synced, "seed %d lost a synced batch", seed)
		require.LessOrEqual(t, len(got), len(written))
		for i := range got {
			require.Equal(t, written[i], got[i], "seed %d batch %d", seed, i)
		}
		// What recovery kept is durable: a second crash keeps all of it.
		m.Crash(r)
		l2 := openTestLog(t, m, st, cfg)
		require.Equal(t, len(got), len(readAll(t, l2)), "seed %d", seed)
		require.NoError(t, l2.Close())
	}
}

// activeFile returns the path of the log's newest segment.
func activeFile(l *PartitionLog) string {
	return segmentFile("data/t-0", l.active().base, logSuffix)
}

// damage appends raw bytes to the active segment behind the log's back.
func damage(t *testing.T, m *MemFS, p string, tail []byte) {
	t.Helper()
	f, err := m.OpenFile(p)
	require.NoError(t, err)
	_, err = f.Write(tail)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestRecoveryTruncatesBadTails(t *testing.T) {
	cases := map[string]func(next int64) []byte{
		"torn batch": func(next int64) []byte {
			_, b := testBatch(next, 3, 50, 1)
			return b[:len(b)-7]
		},
		"torn header": func(next int64) []byte {
			_, b := testBatch(next, 3, 50, 1)
			return b[:30]
		},
		"garbage": func(int64) []byte {
			g := make([]byte, 300)
			rand.New(rand.NewSource(9)).Read(g)
			return g
		},
		"zeros": func(int64) []byte { return make([]byte, 4096) },
		"bad crc": func(next int64) []byte {
			_, b := testBatch(next, 3, 50, 1)
			b[len(b)-1] ^= 1
			return b
		},
		"gap in offsets": func(next int64) []byte {
			_, b := testBatch(next+1, 3, 50, 1)
			return b
		},
		"repeated offset": func(next int64) []byte {
			_, b := testBatch(next-1, 1, 50, 1)
			return b
		},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			m, st := NewMemFS(), NewMemState()
			l := openTestLog(t, m, st, smallSegments)
			var want [][]byte
			for i := 0; i < 5; i++ {
				want = append(want, appendBatch(t, l, 1000, 2, 30, 1))
			}
			require.NoError(t, l.Sync())
			size, end, p := l.active().size, l.EndOffset(), activeFile(l)
			require.NoError(t, l.Close())
			damage(t, m, p, bad(end))

			l = openTestLog(t, m, st, smallSegments)
			defer l.Close()
			require.Equal(t, end, l.EndOffset())
			require.Equal(t, want, readAll(t, l))
			fsize, err := m.Stat(p)
			require.NoError(t, err)
			require.Equal(t, size, fsize, "the bad tail is cut off the file")
			appendBatch(t, l, 1000, 1, 10, 1) // and the log takes writes again
		})
	}
}

func TestRecoveryDropsSegmentsAfterATornOne(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	for i := 0; i < 30; i++ {
		appendBatch(t, l, 1000, 2, 100, 1)
	}
	segs := l.Segments()
	require.GreaterOrEqual(t, len(segs), 3)
	// Nothing synced; a crash that tears the first segment must take the rest with it,
	// even though later files hold whole batches.
	first := segmentFile("data/t-0", segs[0].BaseOffset, logSuffix)
	b, err := m.ReadFile(first)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.NoError(t, m.WriteFile(first, b[:len(b)-10]))

	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Len(t, l.Segments(), 1)
	hs := splitBatches(t, b[:l.active().size])
	require.Equal(t, hs[len(hs)-1].NextOffset(), l.EndOffset())
	names, err := m.ReadDir("data/t-0")
	require.NoError(t, err)
	require.Equal(t, []string{"00000000000000000000.log"}, names)
}

func TestRecoveryDropsNonContiguousSegment(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	l := openTestLog(t, m, st, smallSegments)
	for i := 0; i < 5; i++ {
		appendBatch(t, l, 1000, 2, 10, 1)
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	// A stray segment that does not start at the end offset (10).
	_, b := testBatch(50, 1, 10, 1)
	require.NoError(t, m.WriteFile(segmentFile("data/t-0", 50, logSuffix), b))
	l = openTestLog(t, m, st, smallSegments)
	defer l.Close()
	require.Equal(t, int64(10), l.EndOffset())
	require.Len(t, l.Segments(), 1)
	_, err := m.Stat(segmentFile("data/t-0", 50, logSuffix))
	require.Error(t, err)
}

func TestRecoveryRemovesOrphanIndexFiles(t *testing.T) {
	m, st := NewMemFS(), NewMemState()
	require.NoError(t, m.MkdirAll("data/t-0"))
	require.NoError(t, m.WriteFile(segmentFile("data/t-0", 77, indexSuffix), []byte("stale")))
	require.NoError(t, m.WriteFile("data/t-0/unrelated.txt", []byte("keep")))
	l := openTestLog(t, m, st, smallSegments)
	defer l.Close()
	names, err := m.ReadDir("data/t-0")
	require.NoError(t, err)
	require.Equal(t, []string{"00000000000000000000.log", "unrelated.txt"}, names)
}
