package disk

import (
	"fmt"
	"math/rand"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// appendKeyed appends one batch of a record per key at the log's end, valued
// "<key>@<offset>".
func appendKeyed(t *testing.T, l *PartitionLog, now int64, keys ...string) {
	t.Helper()
	base := l.EndOffset()
	var kvs []batch.KV
	for i, k := range keys {
		kvs = append(kvs, batch.KV{Key: []byte(k), Value: fmt.Appendf(nil, "%s@%d", k, base+int64(i))})
	}
	b := batch.Build(kvs, batch.NoProducer, now)
	batch.SetBaseOffset(b, base)
	h, err := batch.Check(b)
	require.NoError(t, err)
	require.NoError(t, l.Append(now, h, b))
}

// compactedFixture is a synced log of three segments (two closed) where every key has
// several values; it returns the log and the request cleaning its closed segments.
func compactedFixture(t *testing.T, fsys *MemFS, st *MemState) (*PartitionLog, replica.CleanRequest) {
	l := openTestLog(t, fsys, st, replica.SegmentConfig{SegmentBytes: 400})
	for i := 0; i < 12; i++ {
		appendKeyed(t, l, 1000, "a", "b")
	}
	require.NoError(t, l.Sync())
	segs := l.Segments()
	require.GreaterOrEqual(t, len(segs), 3)
	return l, replica.CleanRequest{UpTo: segs[len(segs)-2].EndOffset, NowMs: 2000,
		DeleteRetentionMs: 1000}
}

// lastValues reads the log from its start: each key's last value and the record count.
func lastValues(t *testing.T, l *PartitionLog) (map[string]string, int) {
	got := readAllRecords(t, l)
	last := map[string]string{}
	for _, r := range got {
		last[r.key] = string(r.value)
	}
	return last, len(got)
}

func TestCleanKeepsOffsetsAndShrinksClosedSegments(t *testing.T) {
	fsys, st := NewMemFS(), NewMemState()
	l, req := compactedFixture(t, fsys, st)
	before := l.Segments()
	wantLast, n := lastValues(t, l)
	res, err := l.CleanWith(req, CleanOptions{Codec: compress.Codecs{}})
	require.NoError(t, err)
	require.Positive(t, res.Segments)
	require.Less(t, res.BytesAfter, res.BytesBefore)
	after := l.Segments()
	require.Len(t, after, len(before))
	for i := range before {
		require.Equal(t, before[i].BaseOffset, after[i].BaseOffset)
		require.Equal(t, before[i].EndOffset, after[i].EndOffset, "offsets are kept")
	}
	require.Equal(t, before[len(before)-1], after[len(after)-1], "the active segment is untouched")
	gotLast, m := lastValues(t, l)
	require.Equal(t, wantLast, gotLast)
	require.Less(t, m, n)
	// A second clean (more values, a later horizon) merges the empty batches the first
	// one left with the new ones: no two empty batches follow each other.
	for i := 0; i < 12; i++ {
		appendKeyed(t, l, 1000, "a", "b")
	}
	require.NoError(t, l.Sync())
	segs := l.Segments()
	req.UpTo = segs[len(segs)-2].EndOffset
	_, err = l.CleanWith(req, CleanOptions{Codec: compress.Codecs{}})
	require.NoError(t, err)
	for _, s := range l.Segments() {
		b, err := l.Read(s.BaseOffset, 1<<20, l.EndOffset())
		require.NoError(t, err)
		prevEmpty := false
		for _, h := range storedHeaders(t, b) {
			empty := h.RecordCount == 0 && !h.HasProducer()
			require.False(t, empty && prevEmpty, "segment %d: two empty batches in a row",
				s.BaseOffset)
			prevEmpty = empty
		}
	}
	wantLast, _ = lastValues(t, l)
	require.NoError(t, l.Close())
	l = openTestLog(t, fsys, st, replica.SegmentConfig{SegmentBytes: 400})
	gotLast, _ = lastValues(t, l)
	require.Equal(t, wantLast, gotLast, "after a reopen (recovery validates the cleaned segments)")
}

// storedHeaders splits a read into its batches, checked as stored batches.
func storedHeaders(t *testing.T, b []byte) []batch.Header {
	var hs []batch.Header
	for len(b) > 0 {
		h, err := batch.CheckStored(b[:min(len(b), int(binaryLen(b)))])
		require.NoError(t, err)
		hs = append(hs, h)
		b = b[h.Size():]
	}
	return hs
}

func binaryLen(b []byte) int64 {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return int64(len(b))
	}
	return int64(h.Size())
}

// A crash at each step of a swap leaves a valid log: with the .cleaned file (discarded)
// and with the .swap file (finished), whichever rename the fault stopped.
func TestCrashDuringSwapLeavesAValidLog(t *testing.T) {
	for _, stop := range []string{cleanedSuffix, swapSuffix} {
		t.Run(strings.TrimPrefix(stop, "."), func(t *testing.T) {
			fsys, st := NewMemFS(), NewMemState()
			l, req := compactedFixture(t, fsys, st)
			wantLast, n := lastValues(t, l)
			fsys.SetFault(func(op Op, p string) error {
				if op == OpRename && strings.HasSuffix(p, stop) {
					return syscall.EIO
				}
				return nil
			})
			_, err := l.CleanWith(req, CleanOptions{Codec: compress.Codecs{}})
			require.Error(t, err)
			fsys.SetFault(nil)
			fsys.Crash(rand.New(rand.NewSource(1)))
			l = openTestLog(t, fsys, st, replica.SegmentConfig{SegmentBytes: 400})
			gotLast, m := lastValues(t, l)
			require.Equal(t, wantLast, gotLast)
			names, err := fsys.ReadDir("data/t-0")
			require.NoError(t, err)
			for _, name := range names {
				require.NotContains(t, name, cleanedSuffix)
				require.NotContains(t, name, swapSuffix)
			}
			if stop == swapSuffix {
				require.Less(t, m, n, "recovery finished the swap of the first segment")
			} else {
				require.Equal(t, n, m, "the unfinished clean was discarded")
			}
		})
	}
}

// overwriteAndClean appends rounds of overwrites of keys a and b and cleans the closed
// segments after each round, as the broker's cleaner would.
func overwriteAndClean(t *testing.T, l *PartitionLog, rounds int) {
	t.Helper()
	for r := 0; r < rounds; r++ {
		for i := 0; i < 12; i++ {
			appendKeyed(t, l, 1000, "a", "b")
		}
		require.NoError(t, l.Sync())
		segs := l.Segments()
		_, err := l.CleanWith(replica.CleanRequest{UpTo: segs[len(segs)-2].EndOffset,
			NowMs: 2000, DeleteRetentionMs: 1000}, CleanOptions{Codec: compress.Codecs{}})
		require.NoError(t, err)
	}
}

// Cleans merge the segments earlier cleans shrank (their sizes add up to at most
// segment.bytes): overwriting the same keys for ever keeps a bounded number of segments
// and bytes, not one segment per segment rolled; offsets stay dense and every key's
// last value stays, across a reopen.
func TestCleansMergeShrunkSegments(t *testing.T) {
	fsys, st := NewMemFS(), NewMemState()
	cfg := replica.SegmentConfig{SegmentBytes: 400}
	l := openTestLog(t, fsys, st, cfg)
	overwriteAndClean(t, l, 3)
	segs3 := len(l.Segments())
	overwriteAndClean(t, l, 27)
	segs := l.Segments()
	var size int64
	for i, s := range segs {
		size += s.SizeBytes
		if i > 0 {
			require.Equal(t, segs[i-1].EndOffset, s.BaseOffset, "segments chain")
		}
	}
	require.LessOrEqual(t, len(segs), segs3, "30 rounds keep no more segments than 3")
	require.LessOrEqual(t, len(segs), 6)
	require.Less(t, size, int64(6*400))
	require.EqualValues(t, 0, segs[0].BaseOffset)
	wantLast, n := lastValues(t, l)
	require.Equal(t, map[string]string{"a": fmt.Sprintf("a@%d", l.EndOffset()-2),
		"b": fmt.Sprintf("b@%d", l.EndOffset()-1)}, wantLast)
	require.Less(t, n, 40, "records: the last of each key plus the uncleaned segments")
	require.NoError(t, l.Close())
	l = openTestLog(t, fsys, st, cfg)
	gotLast, m := lastValues(t, l)
	require.Equal(t, wantLast, gotLast)
	require.Equal(t, n, m)
	require.Len(t, l.Segments(), len(segs))
}

// A crash after a merge's commit point (the .swap is durable) but before the merged
// segments' files went, or with the rename over the first one undone, leaves a valid
// log: recovery finishes the swap and drops the segments it covers.
func TestCrashDuringAMergeLeavesAValidLog(t *testing.T) {
	for _, stop := range []Op{OpRemove, OpRename} {
		t.Run(stop.String(), func(t *testing.T) {
			fsys, st := NewMemFS(), NewMemState()
			cfg := replica.SegmentConfig{SegmentBytes: 400}
			l := openTestLog(t, fsys, st, cfg)
			overwriteAndClean(t, l, 3)
			for i := 0; i < 12; i++ {
				appendKeyed(t, l, 1000, "a", "b")
			}
			require.NoError(t, l.Sync())
			wantLast, _ := lastValues(t, l)
			before := len(l.Segments())
			fsys.SetFault(func(op Op, p string) error {
				switch {
				case stop == OpRemove && op == OpRemove && strings.HasSuffix(p, logSuffix):
					return syscall.EIO // a merged segment's file
				case stop == OpRename && op == OpRename && strings.HasSuffix(p, swapSuffix):
					return syscall.EIO // .swap over .log (the log goes offline)
				}
				return nil
			})
			segs := l.Segments()
			_, err := l.CleanWith(replica.CleanRequest{UpTo: segs[len(segs)-2].EndOffset,
				NowMs: 2000, DeleteRetentionMs: 1000}, CleanOptions{Codec: compress.Codecs{}})
			require.Error(t, err)
			fsys.SetFault(nil)
			fsys.Crash(rand.New(rand.NewSource(1)))
			l = openTestLog(t, fsys, st, cfg)
			gotLast, _ := lastValues(t, l)
			require.Equal(t, wantLast, gotLast)
			require.Less(t, len(l.Segments()), before, "the merge was finished")
			for i, s := range l.Segments() {
				if i > 0 {
					require.Equal(t, l.Segments()[i-1].EndOffset, s.BaseOffset)
				}
			}
			names, err := fsys.ReadDir("data/t-0")
			require.NoError(t, err)
			logs := 0
			for _, name := range names {
				require.NotContains(t, name, swapSuffix)
				if strings.HasSuffix(name, logSuffix) {
					logs++
				}
			}
			require.Equal(t, len(l.Segments()), logs, "no leftover segment file")
		})
	}
}
