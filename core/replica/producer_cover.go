package replica

import (
	"errors"
	"math"

	"github.com/sluicemq/sluice/core/batch"
)

// errScanDone stops a header scan once it reaches the offset it was asked to reach.
var errScanDone = errors.New("scan reached its bound")

// coverProducers makes sure a producer snapshot taken at exactly upTo is saved, before
// the log start moves to upTo and the batches below it go (retention, DeleteRecords).
// Recovery and truncation rebuild the producer table from the newest snapshot at or
// above the log start plus the batches after it; without this, a producer whose batches
// all went before any snapshot covered them would be forgotten at the next restart, and
// a retry of one of its acknowledged batches appended again (simulator seed 3687). As in
// Kafka (KIP-360), producer state outlives the batches that made it.
//
// The snapshot sits at the new start, not above it: a follower's truncation may cut the
// log anywhere from its start up, deleting every snapshot past the cut, and one taken at
// the log end went so, leaving the table to be rebuilt from what the log still held
// (seed 2642: a new leader answered UNKNOWN_PRODUCER_ID to a producer it had
// acknowledged). The log keeps the newest snapshot at or below its start when it prunes.
//
// When everything appended is durable and upTo is the log end, the snapshot is the
// current table; otherwise it is rebuilt for upTo from the newest snapshot at or below
// it plus the batches between, which are about to go. On an error the caller must not
// move the start: the deletion waits for the next attempt.
func (r *Replica) coverProducers(upTo int64) error {
	if len(r.producers) == 0 || mutantOn("no-snapshot-before-delete") {
		return nil
	}
	if (upTo == r.durable || mutantOn("cover-snapshot-at-log-end")) &&
		r.durable == r.log.EndOffset() {
		if err := r.log.SaveSnapshot(r.durable, encodeProducers(r.producers)); err != nil {
			return err
		}
		r.hit(pSnapshotBeforeDelete)
		r.snapOffset, r.sinceSnapshot = r.durable, 0
		return nil
	}
	off, data, found, err := r.log.LoadSnapshotAtMost(upTo)
	if err != nil {
		return err
	}
	if found && off == upTo {
		return nil
	}
	table := map[int64]*producerEntry{}
	from := r.log.StartOffset()
	if found && off >= from {
		if table, err = decodeProducers(data); err != nil {
			return err
		}
		from = off
	}
	if err := r.replayProducers(table, from, upTo); err != nil {
		return err
	}
	if err := r.log.SaveSnapshot(upTo, encodeProducers(table)); err != nil {
		return err
	}
	r.hit(pSnapshotRebuilt)
	r.snapOffset = max(r.snapOffset, upTo)
	return nil
}

// replayProducers records in table every batch whose base offset is in [from, upTo).
func (r *Replica) replayProducers(table map[int64]*producerEntry, from, upTo int64) error {
	err := r.log.ScanHeaders(from, func(h batch.Header) error {
		if h.BaseOffset >= upTo {
			return errScanDone
		}
		if h.BaseOffset >= from {
			r.recordProducerIn(table, &h)
		}
		return nil
	})
	if errors.Is(err, errScanDone) {
		return nil
	}
	return err
}

// replayAll is replayProducers up to the log end.
func (r *Replica) replayAll(table map[int64]*producerEntry, from int64) error {
	return r.replayProducers(table, from, math.MaxInt64)
}
