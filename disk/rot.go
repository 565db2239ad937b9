package disk

import (
	"errors"
	"fmt"
	"io"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/batch"
)

// Corruption at rest (bit rot). A byte of a synced batch may change on the medium
// without any error from the disk. Kafka's broker serves segment bytes as stored and
// leaves the CRC to consumers; Sluice checks every batch it serves (Read verifies the
// CRC-32C, the record count and the offsets chain), so a rotten batch is never sent to
// a client or a follower. On a mismatch the read fails with ErrCorrupt, the log records
// a rot mark in the state store and goes offline (KAFKA_STORAGE_ERROR, as for a read
// error) until a restart. The next recovery validates every segment in full (the mark
// overrides the index certificates, which would otherwise let it skip the rotten
// bytes) and handles a rotten batch as docs/storage.md ("Corruption at rest") says: a
// bad batch followed by a valid batch of higher offsets cannot be a torn write (a torn
// write only cuts the tail), so the log start moves past it, keeping every offset
// where it was; a bad batch with nothing valid after it is a torn tail and is
// truncated, as before.

// ErrCorrupt is wrapped by the error of a Read that found a served batch corrupt.
var ErrCorrupt = errors.New("corrupt batch at rest")

func (l *PartitionLog) rotKey() []byte { return []byte(l.prefix + "rot") }

// verifyServed checks the batches a Read is about to return: each batch's CRC, record
// count and codec (batch.Check), the first holding offset and each following its
// predecessor, none ending past the segment's end. Base offsets and lengths are outside
// the CRC in the v2 format; a flipped length shows up as a bad CRC or a broken chain, a
// flipped base offset as a broken chain (or checkUnserved).
func verifyServed(b []byte, offset, end int64) error {
	next := int64(-1)
	for pos := 0; pos < len(b); {
		h, err := batch.ParseHeader(b[pos:])
		if err == nil && pos+h.Size() > len(b) {
			err = errShortBatch
		}
		if err == nil {
			_, err = batch.CheckStored(b[pos : pos+h.Size()])
		}
		switch {
		case err != nil:
		case next < 0 && (h.BaseOffset > offset || h.NextOffset() <= offset):
			err = fmt.Errorf("first batch [%d, %d) does not hold offset %d", h.BaseOffset,
				h.NextOffset(), offset)
		case next >= 0 && h.BaseOffset != next:
			err = fmt.Errorf("batch at %d follows one ending at %d", h.BaseOffset, next)
		case h.NextOffset() > end:
			err = fmt.Errorf("batch [%d, %d) ends past the log end %d", h.BaseOffset,
				h.NextOffset(), end)
		}
		if err != nil {
			return &corruptError{int64(pos), fmt.Errorf("read at offset %d: %w", offset, err)}
		}
		next = h.NextOffset()
		pos += h.Size()
	}
	return nil
}

// isCorrupt reports whether a read failed on bad bytes rather than on I/O.
func isCorrupt(err error) bool {
	if err == nil {
		return false // before the declaration, which escapes: no allocation per read
	}
	var cerr *corruptError
	return errors.As(err, &cerr)
}

// rotFound records a corrupt read: the rot mark makes the next recovery validate every
// segment, and the log goes offline. Called with mu held.
func (l *PartitionLog) rotFound(cause error) error {
	if err := l.state.Set(l.rotKey(), []byte{1}); err != nil {
		l.lg.Error("cannot record corruption for the next recovery", zap.Error(err))
	}
	return l.goOffline(cause)
}

func (l *PartitionLog) rotMarked() (bool, error) {
	_, ok, err := l.state.Get(l.rotKey())
	return ok, err
}

// rotSkip decides whether the bad batch h ending at file position after, in seg, is
// corruption at rest rather than a torn tail: it is when the bytes after it are a valid
// batch of a higher offset than the bad one should have started at. It returns that
// batch's base offset, where the log must start, or -1. A read error is returned: it
// must fail the open, never decide a truncation.
func (l *PartitionLog) rotSkip(seg *segment, after, size int64) (int64, error) {
	sc := newScanner(seg.f, after, size)
	h, b, err := sc.next(true)
	var cerr *corruptError
	switch {
	case err == io.EOF || errors.As(err, &cerr):
		return -1, nil
	case err != nil:
		return -1, err
	}
	if _, err := batch.CheckStored(b); err != nil {
		return -1, nil
	}
	if h.BaseOffset <= seg.next || h.LastOffset()-seg.base > maxRelOffset {
		return -1, nil
	}
	return h.BaseOffset, nil
}

// skipRotten accepts a rotten batch ending at file position after into seg without
// indexing it: the segment continues at resume, with an index entry there so that no
// read or header scan from resume on walks over the rotten header.
func (l *PartitionLog) skipRotten(seg *segment, pos, after, resume int64, bad error) {
	l.lg.Error("corrupt batch at rest; the log will start after it", zap.Int64("segment", seg.base),
		zap.Int64("at", pos), zap.Int64("offset", seg.next), zap.Int64("new_start", resume),
		zap.Error(bad))
	seg.idx.offs = append(seg.idx.offs, offsetEntry{rel: uint32(resume - seg.base), pos: uint32(after)})
	seg.idx.lastOff = after
	seg.size, seg.next = after, resume
	l.rotStart = max(l.rotStart, resume)
}

// afterRot persists the start offset past the rotten batches recovery skipped, removes
// the segments wholly below it and clears the rot mark. The start offset is written
// first: a crash part way leaves segments below a durable start, which the next
// recovery ignores as it does after DeleteRecords.
func (l *PartitionLog) afterRot(persisted int64) (int64, error) {
	if l.rotStart > persisted {
		if err := l.state.Set(l.startKey(), be64(l.rotStart)); err != nil {
			return persisted, err
		}
		persisted = l.rotStart
		n := 0
		for n < len(l.segs)-1 && l.segs[n].next <= persisted {
			if err := l.removeSegment(l.segs[n]); err != nil {
				return persisted, err
			}
			n++
		}
		l.segs = append([]*segment(nil), l.segs[n:]...)
	}
	if err := l.state.Delete(l.rotKey()); err != nil {
		return persisted, err
	}
	return persisted, nil
}

// checkUnserved checks the batch h at file position pos that a read found and did not
// serve because it ends past the read's limit: a header whose offsets are rotten could
// otherwise stall a reader on an empty answer forever, silently. It must hold offset
// and pass batch.Check.
func (r *readBuf) checkUnserved(h batch.Header, pos, offset int64) error {
	if h.BaseOffset > offset {
		return &corruptError{pos, fmt.Errorf("batch at %d found for offset %d", h.BaseOffset, offset)}
	}
	if err := r.ensure(pos + int64(h.Size())); err != nil {
		return err
	}
	if _, err := batch.CheckStored(r.buf[pos-r.base : pos-r.base+int64(h.Size())]); err != nil {
		return &corruptError{pos, err}
	}
	return nil
}
