package replica

import (
	"errors"
	"math"

	"github.com/sluicemq/sluice/core/batch"
)

// errScanDone stops a header scan once it reaches the offset it was asked to reach.
var errScanDone = errors.New("scan reached its bound")

// coverProducers makes sure a saved producer snapshot describes every batch below upTo,
// before the log start moves to upTo and the batches below it go (retention,
// DeleteRecords). Recovery rebuilds the producer table from the newest snapshot at or
// above the log start plus the batches after it; without this, a producer whose batches
// all went before any snapshot covered them would be forgotten at the next restart, and
// a retry of one of its acknowledged batches appended again (simulator seed 3687). As in
// Kafka (KIP-360), producer state outlives the batches that made it.
//
// When everything appended is durable, the snapshot is the current table at the log
// end; otherwise it is rebuilt for upTo from the newest snapshot plus the batches
// between it and upTo, which are about to go. Either way it is taken at an offset no
// crash can cut the log below once the start moved there. On an error the caller must
// not move the start: the deletion waits for the next attempt.
func (r *Replica) coverProducers(upTo int64) error {
	if r.snapOffset >= upTo || len(r.producers) == 0 ||
		mutantOn("no-snapshot-before-delete") {
		return nil
	}
	if r.durable == r.log.EndOffset() {
		if err := r.log.SaveSnapshot(r.durable, encodeProducers(r.producers)); err != nil {
			return err
		}
		r.hit(pSnapshotBeforeDelete)
		r.snapOffset, r.sinceSnapshot = r.durable, 0
		return nil
	}
	off, data, found, err := r.log.LoadSnapshot()
	if err != nil {
		return err
	}
	if found && off >= upTo {
		r.snapOffset = off
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
	r.snapOffset = upTo
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
