package replica_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

type rec struct{ off, ts int64 }

// OffsetForTimestamp and MaxTimestamp agree with a scan of every appended record that is
// still retained and below the high-water mark, across segments, syncs and DeleteRecords.
func TestTimestampLookupsMatchBruteForce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		flushAlways := rapid.Bool().Draw(rt, "flushAlways")
		c := cfg(flushAlways)
		c.Segment.SegmentBytes = int64(rapid.IntRange(200, 2000).Draw(rt, "segBytes"))
		c.Segment.IndexInterval = rapid.IntRange(1, 500).Draw(rt, "interval")
		r := newReplica(t, replicatest.NewMemLog(c.Segment), c)
		var all []rec
		nb := rapid.IntRange(1, 12).Draw(rt, "batches")
		for i := 0; i < nb; i++ {
			n := rapid.IntRange(1, 4).Draw(rt, "n")
			kvs := make([]batch.TimedKV, n)
			for j := range kvs {
				kvs[j] = batch.TimedKV{Value: []byte("v"), TimestampMs: rapid.Int64Range(0, 30).Draw(rt, "ts")}
			}
			b, err := batch.BuildTimed(kvs, batch.CompressionNone, nil)
			require.NoError(rt, err)
			res := r.Append(1, b)
			require.Zero(rt, res.Err)
			for j := range kvs {
				all = append(all, rec{res.BaseOffset + int64(j), kvs[j].TimestampMs})
			}
			if flushAlways && rapid.Bool().Draw(rt, "sync") && r.NeedsSync() {
				sync(t, r)
			}
			if rapid.IntRange(0, 5).Draw(rt, "del") == 0 && r.HighWatermark() > 0 {
				_, code := r.DeleteRecordsBefore(rapid.Int64Range(0, r.HighWatermark()).Draw(rt, "before"))
				require.Zero(rt, code)
			}
		}
		start, hwm := r.StartOffset(), r.HighWatermark()
		for k := 0; k < 10; k++ {
			ts := rapid.Int64Range(-1, 32).Draw(rt, "q")
			var want *rec
			for i := range all {
				if all[i].off >= start && all[i].off < hwm && all[i].ts >= ts {
					want = &all[i]
					break
				}
			}
			m, found, code := r.OffsetForTimestamp(ts, nil)
			require.Zero(rt, code)
			if want == nil {
				require.False(rt, found, "ts %d: got %+v", ts, m)
			} else {
				require.True(rt, found, "ts %d want %+v", ts, *want)
				require.Equal(rt, [2]int64{want.off, want.ts}, [2]int64{m.Offset, m.Timestamp}, "ts %d start %d hwm %d", ts, start, hwm)
			}
		}
		var best *rec
		for i := range all {
			if all[i].off >= start && all[i].off < hwm && (best == nil || all[i].ts > best.ts) {
				best = &all[i]
			}
		}
		m, found, code := r.MaxTimestamp(nil)
		require.Zero(rt, code)
		if best != nil && found {
			require.Equal(rt, [2]int64{best.off, best.ts}, [2]int64{m.Offset, m.Timestamp}, "max; start %d hwm %d", start, hwm)
		}
		if best != nil && !found {
			rt.Logf("max not found: best %+v start %d hwm %d", *best, start, hwm)
		}
	})
}
