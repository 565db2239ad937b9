package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
)

// EpochEntry says that leader epoch Epoch wrote the log from StartOffset on, until the
// next entry's StartOffset (or the log end, for the last).
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the leader-epoch cache (Kafka's leader-epoch-checkpoint): one entry per
// leader epoch that appended to this log, in increasing epoch and start offset order.
// A follower asks its new leader where its last epoch ended (OffsetForLeaderEpoch) and
// truncates what lies beyond it; consumers (KIP-320) ask the same to detect truncation.
// Invariant R8: epochs strictly increase, start offsets never decrease.
type epochCache struct {
	entries []EpochEntry
}

// latest returns the newest entry, ok false when empty.
func (c *epochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch begins writing at start. It reports whether the cache
// changed: an epoch already the latest is not recorded again. An epoch older than the
// latest, or a start before the latest's, breaks R8.
func (c *epochCache) assign(epoch int32, start int64) bool {
	if last, ok := c.latest(); ok {
		if last.Epoch == epoch {
			return false
		}
		core.Invariant(epoch > last.Epoch && start >= last.StartOffset, "R8",
			"epoch %d at %d after epoch %d at %d", epoch, start, last.Epoch, last.StartOffset)
		if last.StartOffset == start {
			// The previous epoch wrote nothing: it has no range of its own.
			c.entries = c.entries[:len(c.entries)-1]
		}
	}
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: start})
	return true
}

// endOffsetFor answers OffsetForLeaderEpoch for epoch over a log ending at end: the
// largest epoch <= epoch and the offset where it ended, which is the start of the next
// newer epoch, or the log end for the latest. An epoch newer than the latest, or an
// empty cache, gives (-1, -1); one older than the first gives the epoch itself and the
// first entry's start (nothing of it is here).
func (c *epochCache) endOffsetFor(epoch int32, end int64) (int32, int64) {
	last, ok := c.latest()
	switch {
	case !ok || epoch < 0 || epoch > last.Epoch:
		return -1, -1
	case epoch == last.Epoch:
		return epoch, end
	}
	i := 0 // first entry with an epoch newer than the one asked for
	for i < len(c.entries) && c.entries[i].Epoch <= epoch {
		i++
	}
	if i == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[i-1].Epoch, c.entries[i].StartOffset
}

// truncateFromEnd drops the entries of epochs that start at or after end: the log lost
// (or cut) everything they wrote.
func (c *epochCache) truncateFromEnd(end int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= end {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart forgets what lies below start: entries wholly below it go, and the
// one holding start begins there.
func (c *epochCache) truncateFromStart(start int64) bool {
	i := 0 // the newest entry starting at or below start
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= start {
		i++
	}
	if len(c.entries) == 0 || (i == 0 && c.entries[0].StartOffset >= start) {
		return false
	}
	c.entries = append([]EpochEntry(nil), c.entries[i:]...)
	c.entries[0].StartOffset = max(c.entries[0].StartOffset, start)
	return true
}

// epochCacheVersion is the first byte of an encoded cache.
const epochCacheVersion = 1

func (c *epochCache) encode() []byte {
	b := make([]byte, 0, 1+4+12*len(c.entries))
	b = append(b, epochCacheVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.entries)))
	for _, e := range c.entries {
		b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.StartOffset))
	}
	return b
}

var errBadEpochCache = errors.New("malformed leader-epoch cache")

func decodeEpochCache(b []byte) (epochCache, error) {
	if len(b) < 5 || b[0] != epochCacheVersion {
		return epochCache{}, errBadEpochCache
	}
	n := binary.BigEndian.Uint32(b[1:])
	if uint64(len(b)-5) != uint64(n)*12 {
		return epochCache{}, fmt.Errorf("%w: %d entries in %d bytes", errBadEpochCache, n, len(b))
	}
	c := epochCache{entries: make([]EpochEntry, 0, n)}
	for p := 5; p < len(b); p += 12 {
		e := EpochEntry{Epoch: int32(binary.BigEndian.Uint32(b[p:])),
			StartOffset: int64(binary.BigEndian.Uint64(b[p+4:]))}
		if last, ok := c.latest(); ok && (e.Epoch <= last.Epoch || e.StartOffset < last.StartOffset) {
			return epochCache{}, fmt.Errorf("%w: epoch %d at %d after %d at %d",
				errBadEpochCache, e.Epoch, e.StartOffset, last.Epoch, last.StartOffset)
		}
		c.entries = append(c.entries, e)
	}
	return c, nil
}

// loadEpochs restores the leader-epoch cache at open and makes it agree with the log
// that recovery left: entries past its end (their batches were lost) or below its start
// go, and a cache that is missing, unreadable or older than the log's last batch (an
// entry was lost, or the log predates the cache) is rebuilt from the batch headers and
// stored again. The check costs one header read per non-empty log.
func (r *Replica) loadEpochs() error {
	data, found, err := r.log.LoadLeaderEpochs()
	if err != nil {
		return fmt.Errorf("load leader epochs of %s: %w", r.tp, err)
	}
	if found {
		if r.epochs, err = decodeEpochCache(data); err != nil {
			r.lg.Warn("leader-epoch cache unreadable; rebuilding it", zap.Error(err))
			r.epochs = epochCache{}
		}
	}
	start, end := r.log.StartOffset(), r.log.EndOffset()
	r.epochs.truncateFromEnd(end)
	r.epochs.truncateFromStart(start)
	if start >= end {
		return nil
	}
	lastEpoch := int32(-1)
	if err := r.log.ScanHeaders(end-1, func(h batch.Header) error {
		lastEpoch = h.PartitionLeaderEpoch
		return nil
	}); err != nil {
		return fmt.Errorf("read last batch of %s: %w", r.tp, err)
	}
	if last, ok := r.epochs.latest(); ok && last.Epoch == lastEpoch {
		return nil
	}
	return r.rebuildEpochs(start)
}

// rebuildEpochs derives the cache from the batch headers from start on. A batch of an
// older epoch than one before it (impossible in a log this broker wrote) is logged and
// skipped rather than trusted.
func (r *Replica) rebuildEpochs(start int64) error {
	r.hit(pEpochsRebuilt)
	r.epochs = epochCache{}
	err := r.log.ScanHeaders(start, func(h batch.Header) error {
		e := h.PartitionLeaderEpoch
		if last, ok := r.epochs.latest(); ok && e < last.Epoch {
			r.lg.Warn("batch of an older leader epoch after a newer one; not in the cache",
				zap.Int64("offset", h.BaseOffset), zap.Int32("epoch", e),
				zap.Int32("after", last.Epoch))
			return nil
		}
		r.epochs.assign(e, max(h.BaseOffset, start))
		return nil
	})
	if err != nil {
		return fmt.Errorf("rebuild leader epochs of %s: %w", r.tp, err)
	}
	if err := r.log.SaveLeaderEpochs(r.epochs.encode()); err != nil {
		r.lg.Warn("rebuilt leader-epoch cache not stored; the next start rebuilds it",
			zap.Error(err))
	}
	return nil
}

// leadFrom makes this replica's epoch the latest in the cache, starting at the log end,
// as a new leader does. The change is stored with the next append (storeEpochs), not
// now: opening thousands of new partitions must not cost a synced write each.
func (r *Replica) leadFrom(end int64) {
	if last, ok := r.epochs.latest(); ok && last.Epoch > r.leaderEpoch {
		// The log was written in a newer epoch than this node leads in (a data
		// directory from elsewhere): keep appending in that epoch, never an older one.
		r.lg.Warn("log has a newer leader epoch than the replica's; adopting it",
			zap.Int32("log_epoch", last.Epoch), zap.Int32("epoch", r.leaderEpoch))
		r.leaderEpoch = last.Epoch
	}
	if r.epochs.assign(r.leaderEpoch, end) {
		r.epochsDirty = true
	}
}

// storeEpochs durably stores a cache changed since it was last stored, before a batch
// is appended: a batch whose epoch the stored cache lacks would, after a crash, answer
// OffsetForLeaderEpoch from a rebuilt or stale cache.
func (r *Replica) storeEpochs() error {
	if !r.epochsDirty {
		return nil
	}
	if err := r.log.SaveLeaderEpochs(r.epochs.encode()); err != nil {
		return err
	}
	r.epochsDirty = false
	return nil
}

// LeaderEpoch is the epoch this replica stamps into the batches it appends.
func (r *Replica) LeaderEpoch() int32 { return r.leaderEpoch }

// LeaderEpochStart is the offset where this replica's current leader epoch began in
// its log (a leader's log end when it became leader), ok false when the cache holds no
// entry for that epoch. A new leader's high-water mark below it is not yet the
// partition's (KIP-207: ListOffsets answers OFFSET_NOT_AVAILABLE meanwhile).
func (r *Replica) LeaderEpochStart() (int64, bool) {
	last, ok := r.epochs.latest()
	if !ok || last.Epoch != r.leaderEpoch {
		return 0, false
	}
	return last.StartOffset, true
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch from the cache: the largest epoch not
// newer than epoch and where it ended (the log end for the latest); (-1, -1) for an
// epoch newer than the latest.
func (r *Replica) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return r.epochs.endOffsetFor(epoch, r.log.EndOffset())
}

// LeaderEpochs returns a copy of the cache, oldest epoch first.
func (r *Replica) LeaderEpochs() []EpochEntry {
	return append([]EpochEntry(nil), r.epochs.entries...)
}
