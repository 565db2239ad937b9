package disk

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// testBatch builds a batch of n records with valueLen-byte values at base offset base,
// stamped ts.
func testBatch(base int64, n, valueLen int, ts int64) (batch.Header, []byte) {
	recs := make([]batch.KV, n)
	for i := range recs {
		v := make([]byte, valueLen)
		for j := range v {
			v[j] = byte(int(base) + i + j)
		}
		recs[i] = batch.KV{Key: fmt.Appendf(nil, "k%d", base+int64(i)), Value: v}
	}
	b := batch.Build(recs, batch.NoProducer, ts)
	batch.SetBaseOffset(b, base)
	h, err := batch.Check(b)
	if err != nil {
		panic(err)
	}
	return h, b
}

// appendBatch appends a fresh batch at the log's end and returns its bytes.
func appendBatch(t testing.TB, l *PartitionLog, now int64, n, valueLen int, ts int64) []byte {
	t.Helper()
	h, b := testBatch(l.EndOffset(), n, valueLen, ts)
	require.NoError(t, l.Append(now, h, b))
	return b
}

func openTestLog(t testing.TB, fsys FS, st StateStore, cfg replica.SegmentConfig) *PartitionLog {
	t.Helper()
	l, err := OpenPartitionLog(fsys, "data/t-0", st, "log/t-0/", cfg, 1000, zap.NewNop())
	require.NoError(t, err)
	return l
}

// splitBatches cuts a Read result into its batches, checking each one.
func splitBatches(t testing.TB, b []byte) []batch.Header {
	t.Helper()
	var hs []batch.Header
	require.NoError(t, batch.Split(b, func(h batch.Header, _ []byte) error {
		hs = append(hs, h)
		return nil
	}))
	return hs
}

// countingFS counts operations per op kind through MemFS fault injection.
func countOps(m *MemFS) map[Op]int {
	counts := map[Op]int{}
	m.SetFault(func(op Op, _ string) error {
		counts[op]++
		return nil
	})
	return counts
}

// logOpener returns a function that opens the log called name under data/ on fsys,
// with default segment settings and its node state in st.
func logOpener(t testing.TB, st StateStore) func(fsys FS, name string) *PartitionLog {
	return func(fsys FS, name string) *PartitionLog {
		t.Helper()
		l, err := OpenPartitionLog(fsys, "data/"+name, st, "log/"+name+"/",
			replica.SegmentConfig{}, 1000, zap.NewNop())
		require.NoError(t, err)
		return l
	}
}
