package disk

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
)

// A failed fsync may leave pages the kernel marked clean without writing them
// ("fsyncgate"): they read back fine from the page cache, survive a process restart, and
// no later fsync will ever write them. A log that cannot drop such bytes at once (by
// truncating them, see dropUnsynced) marks itself tainted in the state store; the next
// recovery rewrites every segment into a fresh file, whose fsync does write every byte,
// and clears the mark only once that succeeded.

// rewriteSuffix names the temporary copy of a segment being rewritten. Recovery ignores
// the name, so a copy left by a crash part way is harmless; the next rewrite removes it.
const rewriteSuffix = ".rewrite"

// rewriteChunk bounds the memory one rewrite uses.
const rewriteChunk = 1 << 20

func (l *PartitionLog) taintKey() []byte { return []byte(l.prefix + "tainted") }

// markTainted records that some segment may hold bytes no fsync will write: in the
// volatile marks (which live as long as the hazard, and do not share the data disk's
// faults) and in the state store (which also covers a node without volatile marks). If
// both fail, nothing remembers the hazard: the error says what the operator must do.
func (l *PartitionLog) markTainted(cause error) {
	vol := errors.New("no volatile marks")
	if l.volatile != nil && !mutantOn("taint-volatile-skipped") {
		vol = l.volatile.Mark(l.taintKeyName())
	}
	err := l.state.Set(l.taintKey(), []byte{1})
	switch {
	case err != nil && vol != nil:
		l.lg.Error("a failed fsync may have left unwritten pages, and recording it failed too; "+
			"reboot the machine before restarting the node", zap.NamedError("fsync_error", cause),
			zap.Error(err), zap.NamedError("volatile_error", vol))
		return
	case err != nil:
		l.lg.Warn("a failed fsync may have left unwritten pages; the state store could not "+
			"record it, the volatile marks did: a restart rewrites the log, a reboot clears "+
			"the hazard", zap.Error(cause), zap.NamedError("state_error", err))
		return
	}
	l.lg.Warn("a failed fsync may have left unwritten pages; the next recovery rewrites the log",
		zap.Error(cause))
}

func (l *PartitionLog) taintKeyName() string { return string(l.taintKey()) }

func (l *PartitionLog) tainted() (bool, error) {
	_, ok, err := l.state.Get(l.taintKey())
	if ok || err != nil || l.volatile == nil {
		return ok, err
	}
	return l.volatile.Marked(l.taintKeyName())
}

// cureTaint rewrites every recovered segment, then clears the mark.
func (l *PartitionLog) cureTaint() error {
	for _, s := range l.segs {
		if err := l.rewriteSegment(s); err != nil {
			return fmt.Errorf("rewrite segment %d after a failed fsync: %w", s.base, err)
		}
	}
	// The renames must be durable before the mark goes: a crash undoing one would bring
	// back a segment holding bytes no fsync wrote.
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("fsync directory %s after rewriting it: %w", l.dir, err)
	}
	l.dirSynced = l.dirChanges
	l.lg.Warn("rewrote the log after a failed fsync", zap.Int("segments", len(l.segs)))
	if err := l.state.Delete(l.taintKey()); err != nil {
		return err
	}
	if l.volatile != nil {
		// A mark left behind only costs one more rewrite at the next open.
		_ = l.volatile.Clear(l.taintKeyName())
	}
	return nil
}

// rewriteSegment copies the segment's bytes into a new file, fsyncs it and renames it
// over the old one, so every byte of the result was written by a successful fsync.
func (l *PartitionLog) rewriteSegment(s *segment) error {
	tmp := segmentFile(l.dir, s.base, rewriteSuffix)
	if err := l.fs.Remove(tmp); err != nil && !isNotExist(err) {
		return err
	}
	f, err := l.fs.Create(tmp)
	if err != nil {
		return err
	}
	if err := copyFile(f, s.f, s.size); err != nil {
		_ = f.Close()
		_ = l.fs.Remove(tmp)
		return err
	}
	name := segmentFile(l.dir, s.base, logSuffix)
	l.dirChanges++
	err = l.fs.Rename(tmp, name)
	// The handle is reopened under the new name: one a FileCache may close reopens by
	// the name it was opened with.
	_ = f.Close()
	if err != nil {
		return err
	}
	if f, err = l.fs.OpenFile(name); err != nil {
		return err
	}
	_ = s.f.Close()
	s.f, s.synced = f, s.size
	return nil
}

// copyFile writes the first n bytes of src to dst and fsyncs dst.
func copyFile(dst, src File, n int64) error {
	buf := make([]byte, min(n, rewriteChunk))
	for pos := int64(0); pos < n; {
		chunk := buf[:min(int64(len(buf)), n-pos)]
		if err := readFull(src, chunk, pos); err != nil {
			return err
		}
		if _, err := dst.Write(chunk); err != nil {
			return err
		}
		pos += int64(len(chunk))
	}
	return dst.Sync()
}
