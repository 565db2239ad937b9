package disk

import (
	"fmt"
	"math/rand"
	"sort"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// modelBatch is one appended batch as the model remembers it.
type modelBatch struct {
	h batch.Header
	b []byte
}

// logMachine runs random operations against a PartitionLog on a MemFS and against a
// model (a slice of batches, a start offset, the durable end) and checks they agree.
type logMachine struct {
	fs    *MemFS
	st    *MemState
	cfg   replica.SegmentConfig
	l     *PartitionLog
	now   int64
	ts    int64
	reset int64 // offset the model restarts at when everything below start is gone

	batches   []modelBatch
	start     int64
	syncedEnd int64
	offline   bool
	snaps     []int64 // offsets of stored snapshots, ascending
}

func (m *logMachine) end() int64 {
	if len(m.batches) == 0 {
		return m.reset
	}
	return m.batches[len(m.batches)-1].h.NextOffset()
}

func (m *logMachine) open(t *rapid.T) {
	l, err := OpenPartitionLog(m.fs, "data/p", m.st, "p/", m.cfg, m.now, zap.NewNop())
	require.NoError(t, err)
	m.l = l
	m.offline = false
}

// expectOffline checks a call failed because the log is offline.
func (m *logMachine) expectOffline(t *rapid.T, err error) {
	require.ErrorIs(t, err, replica.ErrLogOffline)
}

func (m *logMachine) Append(t *rapid.T) {
	m.now += rapid.Int64Range(0, 60).Draw(t, "dt")
	m.ts += rapid.Int64Range(-20, 40).Draw(t, "dts")
	n := rapid.IntRange(1, 4).Draw(t, "records")
	h, b := testBatch(m.l.EndOffset(), n, rapid.IntRange(0, 200).Draw(t, "valueLen"), m.ts)
	err := m.l.Append(m.now, h, b)
	if m.offline {
		m.expectOffline(t, err)
		return
	}
	require.NoError(t, err)
	m.batches = append(m.batches, modelBatch{h, b})
}

// AppendFailing makes the write fail (a short write); if the truncation that undoes it
// fails too, the log must go offline.
func (m *logMachine) AppendFailing(t *rapid.T) {
	failTruncate := rapid.Bool().Draw(t, "failTruncate")
	h, b := testBatch(m.l.EndOffset(), 1, 50, m.ts)
	m.fs.SetFault(func(op Op, _ string) error {
		if op == OpWrite || (failTruncate && op == OpTruncate) {
			return syscall.ENOSPC
		}
		return nil
	})
	err := m.l.Append(m.now, h, b)
	m.fs.SetFault(nil)
	require.Error(t, err)
	if failTruncate || m.offline {
		m.expectOffline(t, err)
		m.offline = true
	}
}

func (m *logMachine) Sync(t *rapid.T) {
	err := m.l.Sync()
	if m.offline {
		m.expectOffline(t, err)
		return
	}
	require.NoError(t, err)
	m.syncedEnd = m.end()
}

func (m *logMachine) SyncFailing(t *rapid.T) {
	m.fs.SetFault(func(op Op, _ string) error {
		if op == OpSync {
			return syscall.EIO
		}
		return nil
	})
	err := m.l.Sync()
	m.fs.SetFault(nil)
	if err == nil {
		require.False(t, m.offline)
		m.syncedEnd = m.end() // nothing was dirty
		return
	}
	m.expectOffline(t, err)
	if m.offline {
		return // offline already: Sync did not run
	}
	m.offline = true
	// The log truncated what was not durable (the kernel may have marked those pages
	// clean without writing them): a reopen must not bring it back.
	keep := 0
	for keep < len(m.batches) && m.batches[keep].h.NextOffset() <= m.syncedEnd {
		keep++
	}
	m.batches = m.batches[:keep]
	if m.end() < m.start {
		m.batches, m.reset = nil, m.start // everything left is below the start: reopens empty there
	}
}

// Crash loses the process and every unsynced byte (possibly tearing the last writes),
// then reopens: the recovered log must be a prefix of the model holding every synced
// batch.
func (m *logMachine) Crash(t *rapid.T) {
	m.fs.Crash(rand.New(rand.NewSource(rapid.Int64().Draw(t, "crashSeed"))))
	m.now += 10
	m.open(t)
	m.afterReopen(t, true)
}

// Reopen closes cleanly (without syncing) and reopens: nothing may be lost.
func (m *logMachine) Reopen(t *rapid.T) {
	require.NoError(t, m.l.Close())
	m.open(t)
	m.afterReopen(t, false)
}

// ReopenSyncFailing restarts the process during a disk-error spell: recovery's fsync may
// fail, and the next open must then rewrite what it recovers (a later Crash checks it
// survives).
func (m *logMachine) ReopenSyncFailing(t *rapid.T) {
	require.NoError(t, m.l.Close())
	m.fs.SetFault(func(op Op, _ string) error {
		if op == OpSync {
			return syscall.EIO
		}
		return nil
	})
	l, err := OpenPartitionLog(m.fs, "data/p", m.st, "p/", m.cfg, m.now, zap.NewNop())
	m.fs.SetFault(nil)
	if err != nil {
		require.ErrorIs(t, err, syscall.EIO)
		m.open(t)
	} else {
		m.l = l
	}
	m.offline = false
	m.afterReopen(t, false)
}

func (m *logMachine) afterReopen(t *rapid.T, crashed bool) {
	e := m.l.EndOffset()
	require.Equal(t, m.start, m.l.StartOffset(), "the start offset is durable")
	if !crashed {
		require.Equal(t, m.end(), e)
	}
	if e == m.start && m.syncedEnd <= m.start {
		// Possibly everything a crash left is below the durable start: the log restarts
		// empty there.
		keep := 0
		for keep < len(m.batches) && m.batches[keep].h.NextOffset() <= e {
			keep++
		}
		if keep == 0 || m.batches[keep-1].h.NextOffset() != e {
			m.batches, m.reset = nil, e
		}
	}
	if len(m.batches) > 0 || m.reset != e {
		require.GreaterOrEqual(t, e, m.syncedEnd, "a synced batch was lost")
		require.LessOrEqual(t, e, m.end())
		keep := 0
		for keep < len(m.batches) && m.batches[keep].h.NextOffset() <= e {
			keep++
		}
		m.batches = m.batches[:keep]
		require.Equal(t, e, m.end(), "recovery stops at a batch boundary")
	}
	m.syncedEnd = e // recovery makes what it keeps durable
}

func (m *logMachine) Read(t *rapid.T) {
	if m.offline {
		_, err := m.l.Read(m.start, 100, m.end())
		m.expectOffline(t, err)
		return
	}
	if m.start >= m.end() {
		t.Skip("empty log")
	}
	off := rapid.Int64Range(m.start, m.end()-1).Draw(t, "offset")
	maxBytes := rapid.IntRange(1, 3000).Draw(t, "maxBytes")
	upTo := rapid.Int64Range(off, m.end()+3).Draw(t, "upTo")
	got, err := m.l.Read(off, maxBytes, upTo)
	require.NoError(t, err)
	i := sort.Search(len(m.batches), func(i int) bool { return m.batches[i].h.NextOffset() > off })
	var want []byte
	total := 0
	for j := i; j < len(m.batches); j++ {
		mb := m.batches[j]
		if mb.h.NextOffset() > upTo || (total > 0 && total+len(mb.b) > maxBytes) {
			break
		}
		if j > i && m.isSegmentBase(mb.h.BaseOffset) {
			break // a read stays within one segment
		}
		want = append(want, mb.b...)
		total += len(mb.b)
	}
	require.Equal(t, want, got, "read(%d, %d, %d)", off, maxBytes, upTo)
}

func (m *logMachine) isSegmentBase(off int64) bool {
	for _, s := range m.l.Segments() {
		if s.BaseOffset == off {
			return true
		}
	}
	return false
}

func (m *logMachine) Timestamp(t *rapid.T) {
	if m.offline {
		t.Skip("offline")
	}
	ts := rapid.Int64Range(m.ts-200, m.ts+50).Draw(t, "ts")
	got, ok, err := m.l.OffsetForTimestamp(ts)
	require.NoError(t, err)
	for _, mb := range m.batches {
		if mb.h.NextOffset() > m.start && mb.h.MaxTimestamp >= ts {
			require.True(t, ok)
			require.Equal(t, max(mb.h.BaseOffset, m.start), got, "timestamp %d", ts)
			return
		}
	}
	require.False(t, ok, "timestamp %d found at %d", ts, got)
}

func (m *logMachine) ScanHeaders(t *rapid.T) {
	if m.offline {
		t.Skip("offline")
	}
	from := rapid.Int64Range(0, m.end()+2).Draw(t, "from")
	var got []int64
	require.NoError(t, m.l.ScanHeaders(from, func(h batch.Header) error {
		got = append(got, h.BaseOffset)
		return nil
	}))
	var want []int64
	for _, mb := range m.batches {
		if mb.h.NextOffset() > max(from, m.start) {
			want = append(want, mb.h.BaseOffset)
		}
	}
	require.Equal(t, want, got)
}

func (m *logMachine) DeleteSegmentsBelow(t *rapid.T) {
	off := rapid.Int64Range(m.start, m.end()+5).Draw(t, "below")
	before := m.l.Segments()
	err := m.l.DeleteSegmentsBelow(off)
	if m.offline {
		m.expectOffline(t, err)
		return
	}
	require.NoError(t, err)
	n := 0
	for n < len(before)-1 && before[n].EndOffset <= off {
		n++
	}
	require.Equal(t, before[n:], m.l.Segments())
	m.start = max(m.start, before[n].BaseOffset)
}

// TruncateTo cuts the log at a batch boundary at or below the drawn offset; the cut and
// everything below it are durable (a later Crash must neither bring the cut batches
// back nor lose one below the cut).
func (m *logMachine) TruncateTo(t *rapid.T) {
	off := rapid.Int64Range(max(m.start-2, 0), m.end()+2).Draw(t, "truncateTo")
	got, err := m.l.TruncateTo(off)
	if m.offline {
		m.expectOffline(t, err)
		return
	}
	if off >= m.end() {
		require.NoError(t, err)
		require.Equal(t, m.end(), got)
		return
	}
	k := 0
	for k < len(m.batches) && m.batches[k].h.NextOffset() <= off {
		k++
	}
	newEnd := m.reset
	switch {
	case k < len(m.batches):
		newEnd = m.batches[k].h.BaseOffset
	case k > 0:
		newEnd = m.batches[k-1].h.NextOffset()
	}
	if off < m.start || newEnd < m.start {
		require.ErrorIs(t, err, ErrOutOfRange)
		return
	}
	require.NoError(t, err)
	require.Equal(t, newEnd, got)
	if k == 0 {
		m.reset = newEnd
	}
	m.batches = m.batches[:k]
	m.syncedEnd = newEnd // the log up to the cut is durable on return
	kept := m.snaps[:0]
	for _, s := range m.snaps {
		if s <= newEnd {
			kept = append(kept, s)
		}
	}
	m.snaps = kept
}

func (m *logMachine) SetStartOffset(t *rapid.T) {
	off := rapid.Int64Range(m.start-3, m.end()+3).Draw(t, "start")
	err := m.l.SetStartOffset(off)
	switch {
	case m.offline:
		m.expectOffline(t, err)
	case off > m.end():
		require.ErrorIs(t, err, ErrOutOfRange)
	default:
		require.NoError(t, err)
		m.start = max(m.start, off)
	}
}

func (m *logMachine) Snapshot(t *rapid.T) {
	off := rapid.Int64Range(0, m.end()).Draw(t, "snapAt")
	err := m.l.SaveSnapshot(off, fmt.Appendf(nil, "snap-%d", off))
	if m.offline {
		m.expectOffline(t, err)
		return
	}
	require.NoError(t, err)
	i := sort.Search(len(m.snaps), func(i int) bool { return m.snaps[i] >= off })
	if i == len(m.snaps) || m.snaps[i] != off {
		m.snaps = append(m.snaps[:i], append([]int64{off}, m.snaps[i:]...)...)
	}
	// The newest maxSnapshots stay, and the newest at or below the start.
	floor := -1
	for i, s := range m.snaps {
		if s <= m.start {
			floor = i
		}
	}
	var kept []int64
	for i, s := range m.snaps {
		if i == floor || i >= len(m.snaps)-maxSnapshots {
			kept = append(kept, s)
		}
	}
	m.snaps = kept
}

func (m *logMachine) Configure(t *rapid.T) {
	m.cfg = drawSegmentConfig(t)
	m.l.Configure(m.cfg)
}

// Check runs after every action.
func (m *logMachine) Check(t *rapid.T) {
	if m.offline {
		return
	}
	require.Equal(t, m.start, m.l.StartOffset())
	require.Equal(t, m.end(), m.l.EndOffset())
	segs := m.l.Segments()
	require.NotEmpty(t, segs)
	require.LessOrEqual(t, segs[0].BaseOffset, m.start)
	for i := 1; i < len(segs); i++ {
		require.Equal(t, segs[i-1].EndOffset, segs[i].BaseOffset, "segments are contiguous")
	}
	require.Equal(t, m.end(), segs[len(segs)-1].EndOffset)

	wantTs, wantOff := int64(-1), int64(-1)
	for _, mb := range m.batches {
		if mb.h.BaseOffset >= segs[0].BaseOffset && mb.h.MaxTimestamp > wantTs {
			wantTs, wantOff = mb.h.MaxTimestamp, mb.h.BaseOffset
		}
	}
	ts, off := m.l.MaxTimestamp()
	require.Equal(t, wantTs, ts)
	require.Equal(t, wantOff, off)

	snapOff, data, found, err := m.l.LoadSnapshot()
	require.NoError(t, err)
	i := sort.Search(len(m.snaps), func(i int) bool { return m.snaps[i] > m.end() })
	require.Equal(t, i > 0, found)
	if found {
		require.Equal(t, m.snaps[i-1], snapOff)
		require.Equal(t, fmt.Appendf(nil, "snap-%d", snapOff), data)
	}
}

func drawSegmentConfig(t *rapid.T) replica.SegmentConfig {
	return replica.SegmentConfig{
		SegmentBytes:  rapid.Int64Range(300, 3000).Draw(t, "segmentBytes"),
		SegmentMs:     rapid.SampledFrom([]int64{0, 100, 400}).Draw(t, "segmentMs"),
		IndexInterval: rapid.IntRange(1, 600).Draw(t, "indexInterval"),
	}
}

func TestPartitionLogMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &logMachine{fs: NewMemFS(), st: NewMemState(), cfg: drawSegmentConfig(t), now: 1000}
		m.open(t)
		t.Repeat(rapid.StateMachineActions(m))
	})
}
