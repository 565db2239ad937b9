package disk

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
)

// compactRec is one record the model appended.
type compactRec struct {
	off   int64
	key   string
	value []byte // nil: tombstone
	ts    int64  // its batch's max timestamp
}

// compactMachine appends keyed records (values, tombstones; plain, compressed and
// idempotent batches), rolls, syncs, cleans, crashes (also in the middle of a clean)
// and checks after each step that a reader from the log start sees, for every key, the
// last value appended (or its tombstone, or nothing once the tombstone is past the
// horizon of a clean), offsets only increasing, nothing the cleaner did not own removed.
type compactMachine struct {
	fs  *MemFS
	st  *MemState
	cfg replica.SegmentConfig
	l   *PartitionLog
	now int64

	recs      []compactRec // in offset order
	synced    int64        // end offset known durable
	protected int64        // records at or above it were never in a cleaned range
	horizon   int64        // the latest tombstone horizon a clean used
	seq       int32        // the idempotent producer's next sequence
	offline   bool
}

const compactPid = 42

func (m *compactMachine) open(t *rapid.T) {
	l, err := OpenPartitionLog(m.fs, "data/c", m.st, "c/", m.cfg, m.now, zap.NewNop())
	require.NoError(t, err)
	m.l, m.offline = l, false
}

func (m *compactMachine) Append(t *rapid.T) {
	if m.offline {
		t.Skip("offline")
	}
	m.now += rapid.Int64Range(0, 50).Draw(t, "dt")
	n := rapid.IntRange(1, 4).Draw(t, "records")
	base := m.l.EndOffset()
	var tkv []batch.TimedKV
	var added []compactRec
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k%d", rapid.IntRange(0, 5).Draw(t, "key"))
		var v []byte
		if rapid.IntRange(0, 4).Draw(t, "tombstone?") > 0 {
			v = fmt.Appendf(nil, "v%d", base+int64(i))
		}
		tkv = append(tkv, batch.TimedKV{Key: []byte(k), Value: v, TimestampMs: m.now})
		added = append(added, compactRec{off: base + int64(i), key: k, value: v, ts: m.now})
	}
	codec := rapid.SampledFrom([]int{batch.CompressionNone, batch.CompressionGzip,
		batch.CompressionZstd}).Draw(t, "codec")
	b, err := batch.BuildTimed(tkv, codec, func(src []byte) ([]byte, error) {
		return compress.Codecs{}.Compress(int8(codec), src)
	})
	require.NoError(t, err)
	if rapid.Bool().Draw(t, "idempotent") {
		setProducer(b, compactPid, m.seq)
		m.seq += int32(n)
	}
	batch.SetBaseOffset(b, base)
	h, err := batch.Check(b)
	require.NoError(t, err)
	require.NoError(t, m.l.Append(m.now, h, b))
	m.recs = append(m.recs, added...)
}

// setProducer stamps producer id, epoch 0 and base sequence into b and fixes its CRC.
func setProducer(b []byte, pid int64, seq int32) {
	for i := 0; i < 8; i++ {
		b[43+i] = byte(uint64(pid) >> (56 - 8*i))
	}
	b[51], b[52] = 0, 0
	for i := 0; i < 4; i++ {
		b[53+i] = byte(uint32(seq) >> (24 - 8*i))
	}
	crc := batch.ComputeCRC(b)
	b[17], b[18], b[19], b[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
}

func (m *compactMachine) Sync(t *rapid.T) {
	if m.offline {
		t.Skip("offline")
	}
	require.NoError(t, m.l.Sync())
	m.synced = m.l.EndOffset()
}

// Clean cleans the closed segments that are at least minLag old and durable, with a
// random delete.retention.ms, optionally with a fault injected at a random operation
// followed by a crash (a crash at that point of the clean).
func (m *compactMachine) Clean(t *rapid.T) {
	if m.offline {
		t.Skip("offline")
	}
	m.now += rapid.Int64Range(0, 200).Draw(t, "dt")
	minLag := rapid.SampledFrom([]int64{0, 50, 300}).Draw(t, "minLag")
	delRet := rapid.SampledFrom([]int64{0, 100, 1 << 40}).Draw(t, "deleteRetention")
	upTo := int64(-1)
	segs := m.l.Segments()
	for _, s := range segs[:len(segs)-1] {
		if s.EndOffset > m.synced || (s.MaxTimestamp >= 0 && m.now-s.MaxTimestamp < minLag) {
			break
		}
		upTo = s.EndOffset
	}
	if upTo < 0 {
		t.Skip("nothing cleanable")
	}
	req := replica.CleanRequest{DirtyStart: rapid.Int64Range(0, upTo).Draw(t, "dirtyStart"),
		UpTo: upTo, NowMs: m.now, DeleteRetentionMs: delRet,
		KeyMapBytes: rapid.SampledFrom([]int64{0, 120, 1 << 20}).Draw(t, "keyMap")}
	faultAt := rapid.IntRange(0, 30).Draw(t, "faultAt") // 0: no fault
	ops := 0
	if faultAt > 0 {
		m.fs.SetFault(func(Op, string) error {
			ops++
			if ops >= faultAt {
				return syscall.EIO
			}
			return nil
		})
	}
	_, err := m.l.CleanWith(req, CleanOptions{Codec: compress.Codecs{}})
	m.fs.SetFault(nil)
	m.protected = max(m.protected, upTo)
	if h := m.now - delRet; h > m.horizon {
		m.horizon = h
	}
	if faultAt == 0 {
		require.NoError(t, err)
		return
	}
	m.crash(t)
}

func (m *compactMachine) Crash(t *rapid.T) { m.crash(t) }

func (m *compactMachine) crash(t *rapid.T) {
	r := rand.New(rand.NewSource(rapid.Int64().Draw(t, "crashSeed")))
	m.fs.Crash(r)
	m.st.Reopen(r)
	m.now += 10
	m.open(t)
	e := m.l.EndOffset()
	require.GreaterOrEqual(t, e, m.synced, "a synced record was lost")
	keep := 0
	for keep < len(m.recs) && m.recs[keep].off < e {
		keep++
	}
	m.recs = m.recs[:keep]
	m.synced = e
}

func (m *compactMachine) Reopen(t *rapid.T) {
	require.NoError(t, m.l.Close())
	m.open(t)
	require.Equal(t, m.l.EndOffset(), m.end())
}

func (m *compactMachine) end() int64 {
	if len(m.recs) == 0 {
		return 0
	}
	return m.recs[len(m.recs)-1].off + 1
}

// Check reads the whole log from its start.
func (m *compactMachine) Check(t *rapid.T) {
	if m.offline {
		return
	}
	require.Equal(t, m.end(), m.l.EndOffset())
	got := readAllRecords(t, m.l)
	byOff := map[int64]compactRec{}
	for _, r := range m.recs {
		byOff[r.off] = r
	}
	last := map[string]compactRec{}
	for _, r := range m.recs {
		last[r.key] = r
	}
	seen, keys := map[int64]bool{}, map[string]bool{}
	prev := int64(-1)
	for _, g := range got {
		require.Greater(t, g.off, prev, "offsets only increase")
		prev = g.off
		want, ok := byOff[g.off]
		require.True(t, ok, "record at %d was never appended", g.off)
		require.Equal(t, want.key, g.key)
		require.Equal(t, want.value, g.value, "offset %d", g.off)
		seen[g.off] = true
		keys[g.key] = true
	}
	for k, l := range last {
		switch {
		case l.value != nil:
			require.True(t, seen[l.off], "the last value of %s (offset %d) is gone", k, l.off)
		case !seen[l.off]:
			require.Less(t, l.ts, m.horizon, "tombstone of %s at %d gone early", k, l.off)
			require.False(t, keys[k], "%s reads back after its tombstone went", k)
		}
	}
	for _, r := range m.recs {
		if r.off >= m.protected {
			require.True(t, seen[r.off], "record %d was never cleanable but is gone", r.off)
		}
	}
}

// readAllRecords reads every record from the log start to its end.
func readAllRecords(t require.TestingT, l *PartitionLog) []compactRec {
	var out []compactRec
	for off := l.StartOffset(); off < l.EndOffset(); {
		b, err := l.Read(off, 1<<20, l.EndOffset())
		require.NoError(t, err)
		require.NotEmpty(t, b)
		for len(b) > 0 {
			h, err := batch.ParseHeader(b)
			require.NoError(t, err)
			one := b[:h.Size()]
			_, err = batch.CheckStored(one)
			require.NoError(t, err)
			recs, err := batchRecords(one, &h, compress.Codecs{})
			require.NoError(t, err)
			for _, r := range recs {
				if r.offset >= off {
					out = append(out, compactRec{off: r.offset, key: string(r.key),
						value: valueOf(r)})
				}
			}
			off = h.NextOffset()
			b = b[h.Size():]
		}
	}
	return out
}

func valueOf(r rawRecord) []byte {
	if r.tombstone {
		return nil
	}
	return r.value
}

func TestCompactionKeepsTheLastValueOfEveryKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &compactMachine{fs: NewMemFS(), st: NewMemState(), now: 1000, protected: 0,
			horizon: -1 << 62,
			cfg: replica.SegmentConfig{
				SegmentBytes:  rapid.Int64Range(150, 600).Draw(t, "segmentBytes"),
				IndexInterval: rapid.IntRange(1, 300).Draw(t, "indexInterval"),
			}}
		m.open(t)
		t.Repeat(rapid.StateMachineActions(m))
	})
}
