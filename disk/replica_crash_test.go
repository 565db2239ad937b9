package disk_test

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/disk"
)

var errInjected = errors.New("injected fault")

// crashRun drives a replica over a real PartitionLog on a MemFS the way the broker and
// the runtime do — appends, group-committed syncs running on another goroutine while
// appends continue, reads, retention, DeleteRecords, failing writes and fsyncs, power
// losses (also during a sync) and clean restarts — and checks the promise after every
// restart: an acknowledged batch (the high-water mark passed it) and every batch a
// reader saw are still there, byte for byte, and a retried acknowledged idempotent
// batch is never stored twice.
type crashRun struct {
	t       *testing.T
	seed    int64
	r       *rand.Rand
	fs      *disk.MemFS
	st      *disk.MemState
	cfg     replica.Config
	deletes bool // retention and DeleteRecords on
	// cacheLimit > 0 opens the log through a FileCache of that many descriptors, made
	// anew at every restart, so segment handles are evicted (fsynced first when dirty)
	// and reopened throughout.
	cacheLimit int
	proc       *procFS
	// Faults, consulted by one fault function: the sync goroutine reads failSync, which
	// is only changed while no sync runs.
	failWrite, failTruncate, failSync atomic.Bool

	rep      *replica.Replica
	syncDone chan error // the in-flight sync, nil when none
	waits    []crashWait
	acked    map[int64][]byte // base offset -> batch bytes as stored
	seen     map[int64][]byte
	prods    []*crashProducer
}

type crashWait struct {
	base, next int64
	stored     []byte
	p          *crashProducer
	sent       []byte // as the producer sent it, for retries
}

type crashProducer struct {
	id        int64
	seq       int32
	acked     [][]byte
	ackedBase []int64
}

func TestReplicaOverPartitionLogKeepsAcknowledgedAndSeenBatchesAcrossCrashes(t *testing.T) {
	for seed := int64(0); seed < 40; seed++ {
		c := &crashRun{t: t, seed: seed, r: rand.New(rand.NewSource(seed)),
			fs: disk.NewMemFS(), st: disk.NewMemState(), deletes: seed%2 == 0,
			acked: map[int64][]byte{}, seen: map[int64][]byte{},
			prods: []*crashProducer{{id: 7}, {id: 8}}}
		c.cfg = replica.Config{
			Segment:     replica.SegmentConfig{SegmentBytes: 700, IndexInterval: 100},
			RetentionMs: -1, RetentionBytes: -1, MaxMessageBytes: 1 << 20, FlushAlways: true,
			TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: math.MaxInt64,
		}
		if c.deletes {
			c.cfg.RetentionBytes = 2000
		}
		c.run()
	}
}

// The same run with the segment files behind a FileCache of one or two descriptors:
// eviction and reopening must not change what is durable.
func TestReplicaOverCachedPartitionLogKeepsAcknowledgedAndSeenBatchesAcrossCrashes(t *testing.T) {
	for seed := int64(0); seed < 40; seed++ {
		c := &crashRun{t: t, seed: seed, r: rand.New(rand.NewSource(seed)),
			fs: disk.NewMemFS(), st: disk.NewMemState(), deletes: seed%2 == 0,
			acked: map[int64][]byte{}, seen: map[int64][]byte{},
			prods:      []*crashProducer{{id: 7}, {id: 8}},
			cacheLimit: 1 + int(seed%2)}
		c.cfg = replica.Config{
			Segment:     replica.SegmentConfig{SegmentBytes: 700, IndexInterval: 100},
			RetentionMs: -1, RetentionBytes: -1, MaxMessageBytes: 1 << 20, FlushAlways: true,
		}
		if c.deletes {
			c.cfg.RetentionBytes = 2000
		}
		c.run()
	}
}

// procFS is one process's way to the disk: once the process has died, nothing it still
// runs (its sync goroutine) opens or creates a file.
type procFS struct {
	disk.FS
	dead atomic.Bool
}

var errProcessGone = errors.New("the process died in the power loss")

func (p *procFS) OpenFile(path string) (disk.File, error) {
	if p.dead.Load() {
		return nil, errProcessGone
	}
	return p.FS.OpenFile(path)
}

func (p *procFS) Create(path string) (disk.File, error) {
	if p.dead.Load() {
		return nil, errProcessGone
	}
	return p.FS.Create(path)
}

func (c *crashRun) fault(op disk.Op, path string) error {
	switch {
	case op == disk.OpWrite && c.failWrite.Load() && strings.HasSuffix(path, ".log"),
		op == disk.OpTruncate && c.failTruncate.Load(),
		op == disk.OpSync && c.failSync.Load():
		return errInjected
	}
	return nil
}

func (c *crashRun) open() {
	var fsys disk.FS = c.fs
	if c.cacheLimit > 0 {
		// The cache reopens evicted files by name; the process's own view of the disk
		// dies with it at a power loss, as MemFS handles from before a crash do.
		c.proc = &procFS{FS: c.fs}
		fsys = disk.NewFileCache(c.proc, c.cacheLimit)
	}
	l, err := disk.OpenPartitionLog(fsys, "d/t-0", c.st, "t/", c.cfg.Segment, 1000, zap.NewNop())
	require.NoError(c.t, err)
	c.rep, err = replica.New(core.TopicPartition{Topic: "t"}, 1, l, c.cfg, zap.NewNop())
	require.NoError(c.t, err)
}

func (c *crashRun) run() {
	c.fs.SetFault(c.fault)
	c.open()
	for range 300 {
		switch k := c.r.Intn(20); {
		case k < 9:
			c.produce()
		case k < 13:
			c.finishSync()
		case c.rep.Offline() && k < 16:
		case k < 15:
			c.read()
		case k < 16 && c.deletes:
			c.rep.EnforceRetention(1000)
			if hwm, start := c.rep.HighWatermark(), c.rep.StartOffset(); c.r.Intn(3) == 0 && hwm > start {
				_, _ = c.rep.DeleteRecordsBefore(start + c.r.Int63n(hwm-start+1))
			}
		case k < 18:
			c.powerLoss()
		default:
			c.cleanRestart()
		}
	}
}

func (c *crashRun) produce() {
	n := 1 + c.r.Intn(3)
	kvs := make([]batch.KV, n)
	for i := range kvs {
		kvs[i] = batch.KV{Value: make([]byte, c.r.Intn(80))}
		c.r.Read(kvs[i].Value)
	}
	var p *crashProducer
	b := batch.Build(kvs, batch.NoProducer, 1000)
	if c.r.Intn(2) == 0 {
		p = c.prods[c.r.Intn(len(c.prods))]
		b = batch.Build(kvs, batch.Producer{ID: p.id, BaseSequence: p.seq}, 1000)
	}
	sent := append([]byte(nil), b...)
	if c.r.Intn(10) == 0 { // a short write; sometimes its truncation fails too
		c.failWrite.Store(true)
		c.failTruncate.Store(c.r.Intn(3) == 0)
	}
	res := c.rep.Append(1000, b)
	c.failWrite.Store(false)
	c.failTruncate.Store(false)
	if res.Err != 0 {
		return
	}
	if p != nil && !res.Duplicate {
		p.seq += int32(n)
	}
	c.waits = append(c.waits, crashWait{res.BaseOffset, res.WaitOffset, b, p, sent})
	c.startSync()
}

// startSync begins a sync when the replica wants one; Log.Sync runs on another
// goroutine, as the runtime's syncer runs it, while appends go on.
func (c *crashRun) startSync() {
	if c.syncDone != nil || !c.rep.NeedsSync() {
		return
	}
	c.rep.BeginSync()
	done, l := make(chan error, 1), c.rep.Log()
	c.failSync.Store(c.r.Intn(30) == 0)
	go func() { done <- l.Sync() }()
	c.syncDone = done
}

func (c *crashRun) finishSync() {
	if c.syncDone == nil {
		return
	}
	err := <-c.syncDone
	c.failSync.Store(false)
	c.syncDone = nil
	c.rep.SyncCompleted(err)
	if err != nil {
		c.waits = nil // answered with KAFKA_STORAGE_ERROR
		return
	}
	kept := c.waits[:0]
	for _, w := range c.waits {
		if c.rep.HighWatermark() < w.next {
			kept = append(kept, w)
			continue
		}
		c.acked[w.base] = w.stored
		if w.p != nil {
			w.p.acked = append(w.p.acked, w.sent)
			w.p.ackedBase = append(w.p.ackedBase, w.base)
		}
	}
	c.waits = kept
	c.startSync()
}

func (c *crashRun) read() {
	hwm, start := c.rep.HighWatermark(), c.rep.StartOffset()
	if hwm <= start {
		return
	}
	res := c.rep.Read(start+c.r.Int63n(hwm-start), 1+c.r.Intn(400))
	if res.Err != 0 {
		return // the log went offline under a sync not yet reported
	}
	require.NoError(c.t, batch.Split(res.Records, func(h batch.Header, one []byte) error {
		require.Less(c.t, h.LastOffset(), hwm, "seed %d: read past the high-water mark", c.seed)
		c.seen[h.BaseOffset] = append([]byte(nil), one...)
		return nil
	}))
}

func (c *crashRun) powerLoss() {
	if c.proc != nil {
		c.proc.dead.Store(true)
	}
	c.fs.Crash(c.r)
	if c.syncDone != nil {
		<-c.syncDone // the process is gone: its sync is never reported
		c.syncDone = nil
	}
	c.failSync.Store(false)
	c.rep.Close()
	c.waits = nil
	c.open()
	c.check()
	for _, p := range c.prods { // unacknowledged tails may be gone: start afresh
		*p = crashProducer{id: p.id + 100}
	}
}

func (c *crashRun) cleanRestart() {
	for c.syncDone != nil {
		c.finishSync()
	}
	c.rep.Shutdown()
	c.rep.Close()
	c.waits = nil
	c.open()
	c.check()
}

func (c *crashRun) check() {
	t, start, hwm := c.t, c.rep.StartOffset(), c.rep.HighWatermark()
	for what, m := range map[string]map[int64][]byte{"acknowledged": c.acked, "seen": c.seen} {
		for base, want := range m {
			if base < start {
				continue
			}
			require.Less(t, base, hwm, "seed %d: %s batch at %d lost", c.seed, what, base)
			res := c.rep.Read(base, 1)
			require.Zero(t, res.Err)
			var got []byte
			require.NoError(t, batch.Split(res.Records, func(_ batch.Header, one []byte) error {
				if got == nil {
					got = one
				}
				return nil
			}))
			require.Equal(t, want, got, "seed %d: %s batch at %d changed", c.seed, what, base)
		}
	}
	// With retention and DeleteRecords too: producer state outlives the batches that
	// made it (seed 3687), so a retry of a deleted batch is still a duplicate.
	for _, p := range c.prods {
		for i, sent := range p.acked {
			res := c.rep.Append(1000, append([]byte(nil), sent...))
			require.False(t, res.Err == 0 && !res.Duplicate,
				"seed %d: an acknowledged idempotent batch was stored twice", c.seed)
			if res.Duplicate {
				require.Equal(t, p.ackedBase[i], res.BaseOffset, "seed %d", c.seed)
			}
		}
	}
}
