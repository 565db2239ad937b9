package disk

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
)

// PebbleState is a StateStore on pebble. Every write is a synced commit, so a value is
// on disk (in pebble's write-ahead log) when Set or Delete returns. pebble's group commit
// lets concurrent writers share one fsync.
type PebbleState struct {
	db *pebble.DB
}

var _ StateStore = (*PebbleState)(nil)

// OpenPebbleState opens (creating if needed) a pebble database in dir on the real
// filesystem.
func OpenPebbleState(dir string, lg *zap.Logger) (*PebbleState, error) {
	return OpenPebbleStateFS(vfs.Default, dir, lg)
}

// OpenPebbleStateFS opens pebble on any pebble vfs.FS, e.g. vfs.NewCrashableMem() in
// crash tests.
func OpenPebbleStateFS(fs vfs.FS, dir string, lg *zap.Logger) (*PebbleState, error) {
	opts := &pebble.Options{FS: fs, Logger: pebbleLogger{lg.Named("pebble").Sugar()}}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open state store %s: %w", dir, err)
	}
	return &PebbleState{db: db}, nil
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
func (p *PebbleState) Set(key, val []byte) error { return p.db.Set(key, val, pebble.Sync) }

// Delete implements StateStore.
func (p *PebbleState) Delete(key []byte) error { return p.db.Delete(key, pebble.Sync) }

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

// pebbleLogger routes pebble's log lines to zap. pebble calls Fatalf on broken
// invariants and expects it not to return.
type pebbleLogger struct{ s *zap.SugaredLogger }

func (l pebbleLogger) Infof(format string, args ...any)  { l.s.Infof(format, args...) }
func (l pebbleLogger) Errorf(format string, args ...any) { l.s.Errorf(format, args...) }
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.s.Errorf(format, args...)
	panic(fmt.Sprintf("pebble: "+format, args...))
}
