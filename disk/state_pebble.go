package disk

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
)

// PebbleState is a StateStore on pebble. Every write is a synced commit, so a value is
// on disk (in pebble's write-ahead log) when Set or Delete returns. pebble's group commit
// lets concurrent writers share one fsync.
//
// pebble treats a failed write-ahead-log write as fatal (it calls Logger.Fatalf). A
// Set or Delete that meets one returns the error instead, and every later write returns
// it too: the store is then read-only until the node restarts.
type PebbleState struct {
	db     *pebble.DB
	dir    string
	failed atomic.Pointer[error]
}

var _ StateStore = (*PebbleState)(nil)

// diskFullBackoff paces pebble's retries of a flush that met ENOSPC: pebble retries a
// failed flush at once and forever, which without a pause spins a core and logs
// thousands of lines a second.
const diskFullBackoff = time.Second

// OpenPebbleState opens (creating if needed) a pebble database in dir on the real
// filesystem. It first checks that dir's filesystem has the space the open needs and
// returns a *NoSpaceError naming dir and that space when not. ctx bounds the open: when
// it ends first, OpenPebbleState returns ctx's error at once.
// PebbleMaxOpenFiles bounds the files the node-state store keeps open.
const PebbleMaxOpenFiles = 64

func OpenPebbleState(ctx context.Context, dir string, lg *zap.Logger) (*PebbleState, error) {
	if err := checkStateSpace(dir); err != nil {
		return nil, err
	}
	return OpenPebbleStateFS(ctx, vfs.Default, dir, lg)
}

// OpenPebbleStateFS opens pebble on any pebble vfs.FS, e.g. vfs.NewCrashableMem() in
// crash tests. A write that meets ENOSPC while opening makes it return a *NoSpaceError
// (pebble would otherwise retry its flush of the replayed log forever); a lock held by
// another process makes it return a *DirInUseError.
func OpenPebbleStateFS(ctx context.Context, fs vfs.FS, dir string,
	lg *zap.Logger) (*PebbleState, error) {
	lg = lg.Named("pebble")
	g := &diskFullGuard{lg: lg, dir: dir, full: make(chan struct{}), park: make(chan struct{})}
	g.opening.Store(true)
	// MaxOpenFiles keeps pebble's table cache inside the descriptors the node reserves
	// for it (runtime/fds.go, fdPebbleReserve = 100, less its WAL, manifest, lock and
	// options files); pebble's default of 1000 could take descriptors the log handle
	// cache and the connections were promised.
	opts := &pebble.Options{FS: vfs.OnDiskFull(fs, g.onDiskFull),
		Logger: pebbleLogger{lg.Sugar()}, MaxOpenFiles: PebbleMaxOpenFiles}
	opts.EventListener = &pebble.EventListener{BackgroundError: g.backgroundError}
	res := make(chan openResult, 1)
	go func() {
		db, err := pebble.Open(dir, opts)
		res <- openResult{db, err}
	}()
	select {
	case r := <-res:
		g.opening.Store(false)
		if r.err != nil {
			return nil, openErr(dir, r.err)
		}
		return &PebbleState{db: r.db, dir: dir}, nil
	case <-g.full:
		go closeLate(res)
		return nil, g.noSpace(fs)
	case <-ctx.Done():
		go closeLate(res)
		return nil, fmt.Errorf("open state store %s: %w", dir, ctx.Err())
	}
}

// openResult is what pebble.Open returned.
type openResult struct {
	db  *pebble.DB
	err error
}

// closeLate closes a database whose open was abandoned, if that open ever finishes.
func closeLate(res <-chan openResult) {
	if r := <-res; r.db != nil {
		_ = r.db.Close()
	}
}

// openErr words a failed pebble.Open.
func openErr(dir string, err error) error {
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
		return &DirInUseError{Dir: filepath.Dir(dir), Lock: filepath.Join(dir, "LOCK"), Err: err}
	}
	return fmt.Errorf("open state store %s: %w", dir, err)
}

// diskFullGuard is the ENOSPC callback of the store's filesystem (vfs.OnDiskFull).
// While the store opens, the first ENOSPC ends the open with a *NoSpaceError and parks
// the writer that met it, so pebble's endless flush retry never runs; after the open it
// only paces pebble's retries and rate-limits the log.
type diskFullGuard struct {
	lg       *zap.Logger
	dir      string
	opening  atomic.Bool
	fullOnce sync.Once
	full     chan struct{} // closed at the first ENOSPC while opening
	park     chan struct{} // never closed: writers that met ENOSPC while opening wait here
	lastLog  atomic.Int64  // unix nanoseconds of the last disk-full log line
}

func (g *diskFullGuard) onDiskFull() {
	if g.opening.Load() {
		g.fullOnce.Do(func() { close(g.full) })
		<-g.park
		return
	}
	if g.shouldLog() {
		g.lg.Warn("disk full under the node state store; retrying once a second",
			zap.String("dir", g.dir))
	}
	time.Sleep(diskFullBackoff)
}

// backgroundError logs pebble's background errors (a failed flush or compaction, which
// pebble retries) without a stack trace and at most once every ten seconds.
func (g *diskFullGuard) backgroundError(err error) {
	if g.shouldLog() {
		g.lg.Warn("state store background error (pebble retries it)", zap.Error(err))
	}
}

func (g *diskFullGuard) shouldLog() bool {
	now := time.Now().UnixNano()
	last := g.lastLog.Load()
	return now-last >= int64(10*time.Second) && g.lastLog.CompareAndSwap(last, now)
}

// noSpace describes the ENOSPC met while opening.
func (g *diskFullGuard) noSpace(fs vfs.FS) error {
	need := uint64(MinStateFreeBytes)
	free := uint64(0)
	if fs == vfs.Default {
		need = stateNeed(g.dir)
		if f, err := freeBytes(existingParent(g.dir)); err == nil {
			free = f
		}
	}
	return &NoSpaceError{Path: g.dir, Free: free, Need: max(need, free+1)}
}

// Get implements StateStore.
func (p *PebbleState) Get(key []byte) ([]byte, bool, error) {
	v, closer, err := p.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := append([]byte(nil), v...)
	return out, true, closer.Close()
}

// Set implements StateStore.
func (p *PebbleState) Set(key, val []byte) error {
	return p.write(func() error { return p.db.Set(key, val, writeOpts()) })
}

// Delete implements StateStore.
func (p *PebbleState) Delete(key []byte) error {
	return p.write(func() error { return p.db.Delete(key, writeOpts()) })
}

// writeOpts are every write's options: synced, so a write is durable on return.
func writeOpts() *pebble.WriteOptions {
	if mutantOn("state-nosync") {
		return pebble.NoSync
	}
	return pebble.Sync
}

// write runs one synced commit, turning pebble's fatal commit error (a write-ahead log
// write or sync that failed, e.g. ENOSPC) into an error that this and every later write
// returns.
func (p *PebbleState) write(commit func() error) (err error) {
	if f := p.failed.Load(); f != nil {
		return *f
	}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		fe, ok := r.(pebbleFatal)
		if !ok {
			panic(r)
		}
		err = fmt.Errorf("state store %s failed, restart the node once the cause is "+
			"fixed: %s", p.dir, string(fe))
		if strings.Contains(string(fe), syscall.ENOSPC.Error()) {
			err = fmt.Errorf("%w (%w)", err, syscall.ENOSPC)
		}
		p.failed.CompareAndSwap(nil, &err)
	}()
	return commit()
}

// Scan implements StateStore. The iterator reads a consistent view, so fn may write.
func (p *PebbleState) Scan(prefix []byte, fn func(k, v []byte) error) error {
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// Close implements StateStore.
func (p *PebbleState) Close() error { return p.db.Close() }

// prefixEnd returns the smallest key greater than every key with the prefix, or nil
// when there is none (a prefix of 0xff bytes).
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// pebbleFatal is the panic value of pebbleLogger.Fatalf: the formatted message.
type pebbleFatal string

// pebbleLogger routes pebble's log lines to zap. pebble calls Fatalf on broken
// invariants and on failed log writes, and expects it not to return: it panics with a
// pebbleFatal, which PebbleState's writes recover.
type pebbleLogger struct{ s *zap.SugaredLogger }

func (l pebbleLogger) Infof(format string, args ...any)  { l.s.Infof(format, args...) }
func (l pebbleLogger) Errorf(format string, args ...any) { l.s.Errorf(format, args...) }
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf("pebble: "+format, args...)
	l.s.Error(msg)
	panic(pebbleFatal(msg))
}
