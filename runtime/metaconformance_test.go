package runtime

import (
	"context"
	"math/rand"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
	"pgregory.net/rapid"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/disk"
	"github.com/sluicemq/sluice/internal/metatest"
)

// TestMetaWriterConformance runs the metadata port's conformance suite against the
// production single-node adapter: the metadata writer over disk.MetaLog over a
// MemState, pebble's model (a failed write is in doubt and fails the store until a
// restart, which keeps a random prefix of the writes in doubt). Store writes fail on a
// drawn schedule, so answers are Committed or Unknown, and crashes leave records in
// doubt.
func TestMetaWriterConformance(t *testing.T) {
	metatest.Run(t, func(rt *rapid.T) metatest.Adapter {
		a := &prodMetaAdapter{st: disk.NewMemState(),
			faults: rapid.SliceOfN(rapid.IntRange(0, 29), 64, 64).Draw(rt, "faults"),
			crashR: rand.New(rand.NewSource(rapid.Int64().Draw(rt, "crash")))}
		a.st.SetFault(a.fault)
		return a
	})
}

// TestMetaWriterConformanceOnPebble runs the suite on real pebble over its crashable
// in-memory filesystem: a crash keeps only what was synced.
func TestMetaWriterConformanceOnPebble(t *testing.T) {
	metatest.Run(t, func(rt *rapid.T) metatest.Adapter {
		return &pebbleMetaAdapter{fs: vfs.NewCrashableMem()}
	})
}

type pebbleMetaAdapter struct {
	fs *vfs.MemFS
	st *disk.PebbleState
	prodMetaAdapter
}

func (a *pebbleMetaAdapter) Boot(deliver func(broker.Input)) broker.Start {
	st, err := disk.OpenPebbleStateFS(context.Background(), a.fs, "state", zap.NewNop())
	if err != nil {
		panic(err)
	}
	a.st = st
	a.prodMetaAdapter.store = st
	return a.prodMetaAdapter.Boot(deliver)
}

// Crash stops the writer, then keeps of the filesystem only what was synced.
func (a *pebbleMetaAdapter) Crash() {
	a.mu.Lock()
	a.alive = false
	a.mu.Unlock()
	a.w.stop()
	a.w = nil
	crashed := a.fs.CrashClone(vfs.CrashCloneCfg{})
	_ = a.st.Close()
	a.fs = crashed
}

func (a *pebbleMetaAdapter) Close() {
	if a.w != nil {
		a.Crash()
	}
}

type prodMetaAdapter struct {
	store  disk.StateStore // st, unless another store is set
	st     *disk.MemState
	faults []int // consumed one per store operation: 0 fails the write, 1 its sync
	next   int
	crashR *rand.Rand
	log    *disk.MetaLog
	w      *metaWriter

	mu    sync.Mutex
	alive bool
}

// fault runs under the store's lock.
func (a *prodMetaAdapter) fault(op disk.Op, key string) error {
	if !strings.HasPrefix(key, "meta") {
		return nil
	}
	v := a.faults[a.next%len(a.faults)]
	a.next++
	switch {
	case v == 0 && op == disk.OpWrite, v == 1 && op == disk.OpSync:
		return syscall.EIO
	}
	return nil
}

func (a *prodMetaAdapter) Boot(deliver func(broker.Input)) broker.Start {
	if a.store == nil {
		a.store = a.st
	}
	lg, err := disk.NewMetaLog(a.store)
	if err != nil {
		panic(err)
	}
	st, err := lg.Load()
	if err != nil {
		panic(err)
	}
	a.log = lg
	a.mu.Lock()
	a.alive = true
	a.mu.Unlock()
	deliver(broker.MetaLeaderChanged{Leader: 1, Epoch: 1}) // as Node.Start does
	a.w = newMetaWriter(lg, func(in broker.Input) bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		if !a.alive {
			return false
		}
		deliver(in)
		return true
	})
	return broker.Start{Snapshot: st.Snapshot, SnapshotIndex: st.SnapshotIndex,
		Records: st.Records}
}

func (a *prodMetaAdapter) Propose(rec meta.Record, token uint64) { a.w.submit(rec, token) }

func (a *prodMetaAdapter) Settle(done func() bool) {
	for deadline := time.Now().Add(5 * time.Second); !done() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Microsecond)
	}
}

// Crash stops the writer after the append it is doing (its answer is dropped) and
// restarts the store, which settles the writes in doubt.
func (a *prodMetaAdapter) Crash() {
	a.mu.Lock()
	a.alive = false
	a.mu.Unlock()
	a.w.stop()
	a.w = nil
	a.st.Reopen(a.crashR)
}

func (a *prodMetaAdapter) Snapshot(index uint64, image []meta.Record) (bool, error) {
	return true, a.log.Snapshot(index, image)
}

func (a *prodMetaAdapter) Close() {
	if a.w != nil {
		a.Crash()
	}
}
