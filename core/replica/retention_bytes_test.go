package replica_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// retention.bytes deletes the oldest segments only while what remains is still at
// least retention.bytes (Kafka: while size - segment size >= retention.bytes), so the
// partition keeps at least retention.bytes, never the active segment going (the mutant
// replica/retention-bytes-total compares the size before the deletion instead).
func TestRetentionBytesKeepsAtLeastTheBound(t *testing.T) {
	for _, tc := range []struct {
		name        string
		boundOf     func(size int64) int64
		wantDeleted int
	}{
		{"just over two batches", func(s int64) int64 { return 2*s + 1 }, 3},
		{"exactly three batches", func(s int64) int64 { return 3 * s }, 3},
		{"one byte over three", func(s int64) int64 { return 3*s + 1 }, 2},
		{"more than the log", func(s int64) int64 { return 7 * s }, 0},
		{"zero", func(int64) int64 { return 0 }, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg(true)
			log := replicatest.NewMemLog(c.Segment)
			log.BatchesPerSegment = 1
			r := newReplica(t, log, c)
			b := plain("v")
			for i := 0; i < 6; i++ {
				require.Zero(t, r.Append(1, b).Err)
			}
			sync(t, r)
			size := int64(len(b))
			c.RetentionBytes = tc.boundOf(size)
			r.Configure(c)
			require.Equal(t, tc.wantDeleted, r.EnforceRetention(10))
			require.Equal(t, int64(tc.wantDeleted), r.StartOffset())
			var kept int64
			for _, s := range r.Log().Segments() {
				kept += s.SizeBytes
			}
			require.Equal(t, (6-int64(tc.wantDeleted))*size, kept)
			if tc.wantDeleted > 0 && tc.wantDeleted < 5 {
				require.GreaterOrEqual(t, kept, c.RetentionBytes)
			}
		})
	}
}
