package replica

import (
	"encoding/json"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core/batch"
)

// dedupWindow is how many recent batches per producer are remembered for duplicate
// detection. Kafka clients keep at most five requests in flight per partition, so a
// retry always refers to one of the last five.
const dedupWindow = 5

// maxProducersPerPartition bounds the producer table. Past it, the producer whose last
// write is oldest is forgotten; if it writes again with a non-zero sequence it gets
// UNKNOWN_PRODUCER_ID and resets, as after Kafka's producer-id expiry.
const maxProducersPerPartition = 10_000

// batchMeta remembers where one idempotent batch landed.
type batchMeta struct {
	FirstSeq   int32 `json:"f"`
	LastSeq    int32 `json:"l"`
	BaseOffset int64 `json:"b"`
	LastOffset int64 `json:"o"`
}

// producerEntry is the per-producer state of one partition.
type producerEntry struct {
	Epoch   int16       `json:"e"`
	Batches []batchMeta `json:"bs"` // oldest first, at most dedupWindow
	// LastTimestamp is the max timestamp of the producer's last batch, as Kafka's
	// producer state keeps it (DescribeProducers); -1 when unknown: a table restored
	// from a snapshot written before it was kept, until the producer writes again.
	LastTimestamp int64 `json:"t"`
}

// UnmarshalJSON decodes an entry, with LastTimestamp -1 when the snapshot lacks it.
func (p *producerEntry) UnmarshalJSON(data []byte) error {
	type plain producerEntry // without this method
	e := plain{LastTimestamp: -1}
	if err := json.Unmarshal(data, &e); err != nil {
		return err
	}
	*p = producerEntry(e)
	return nil
}

func (p *producerEntry) last() *batchMeta { return &p.Batches[len(p.Batches)-1] }

// producerCheck is the verdict on an incoming idempotent batch.
type producerCheck struct {
	code int16      // 0: append it
	dup  *batchMeta // set when the batch is a retry of one already appended
}

// nextSeq returns the sequence after s, wrapping at 2^31 as Kafka does.
func nextSeq(s int32) int32 {
	if s == 1<<31-1 {
		return 0
	}
	return s + 1
}

// checkProducer applies Kafka's idempotence rules to a batch header.
func (r *Replica) checkProducer(h *batch.Header) producerCheck {
	if !h.HasProducer() {
		return producerCheck{}
	}
	if h.ProducerEpoch < 0 || h.BaseSequence < 0 {
		return producerCheck{code: kerr.InvalidRecord.Code}
	}
	p := r.producers[h.ProducerID]
	switch {
	case p == nil:
		if h.BaseSequence != 0 && !mutantOn("unknown-producer-any-seq") {
			r.hit(pProducerUnknown)
			return producerCheck{code: kerr.UnknownProducerID.Code}
		}
		return producerCheck{}
	case h.ProducerEpoch < p.Epoch && !mutantOn("stale-producer-epoch"):
		r.hit(pProducerFenced)
		return producerCheck{code: kerr.InvalidProducerEpoch.Code}
	case h.ProducerEpoch > p.Epoch:
		if h.BaseSequence != 0 && !mutantOn("new-epoch-any-seq") {
			r.hit(pProducerNewEpochGap)
			return producerCheck{code: kerr.OutOfOrderSequenceNumber.Code}
		}
		return producerCheck{}
	}
	last := h.LastSequence()
	for i := range p.Batches {
		if b := &p.Batches[i]; b.FirstSeq == h.BaseSequence && b.LastSeq == last {
			r.hit(pProducerDuplicate)
			return producerCheck{dup: b}
		}
	}
	if h.BaseSequence == nextSeq(p.last().LastSeq) ||
		(mutantOn("accept-gap") && h.BaseSequence > p.last().LastSeq) {
		return producerCheck{}
	}
	// Anything else is a gap, or a retry older than the window, which Kafka clients
	// never send (at most five requests in flight); Kafka answers both the same way.
	r.hit(pProducerOutOfOrder)
	return producerCheck{code: kerr.OutOfOrderSequenceNumber.Code}
}

// recordProducer notes an appended (or recovered) batch in the producer table.
func (r *Replica) recordProducer(h *batch.Header) { r.recordProducerIn(r.producers, h) }

// recordProducerIn notes a batch in table, the replica's or one being rebuilt.
func (r *Replica) recordProducerIn(table map[int64]*producerEntry, h *batch.Header) {
	if !h.HasProducer() {
		return
	}
	p := table[h.ProducerID]
	if p == nil {
		r.evictProducerIfFull(table)
		p = &producerEntry{Epoch: h.ProducerEpoch}
		table[h.ProducerID] = p
	}
	if h.ProducerEpoch != p.Epoch {
		p.Epoch = h.ProducerEpoch
		p.Batches = p.Batches[:0]
	}
	if mutantOn("window-1") && len(p.Batches) > 0 {
		p.Batches = p.Batches[:0]
	}
	if len(p.Batches) == dedupWindow {
		copy(p.Batches, p.Batches[1:])
		p.Batches = p.Batches[:dedupWindow-1]
	}
	p.Batches = append(p.Batches, batchMeta{FirstSeq: h.BaseSequence, LastSeq: h.LastSequence(),
		BaseOffset: h.BaseOffset, LastOffset: h.LastOffset()})
	p.LastTimestamp = h.MaxTimestamp
}

// ProducerState is one idempotent producer a partition remembers (DescribeProducers).
type ProducerState struct {
	ID            int64
	Epoch         int16
	LastSequence  int32 // of its last batch
	LastTimestamp int64 // max timestamp of its last batch; -1 when unknown
}

// ActiveProducers lists the producers in the replica's producer table, by id: every
// producer that wrote a batch still described by the table (at most
// maxProducersPerPartition), as Kafka lists the unexpired entries of its producer state.
func (r *Replica) ActiveProducers() []ProducerState {
	out := make([]ProducerState, 0, len(r.producers))
	for id, p := range r.producers {
		out = append(out, ProducerState{ID: id, Epoch: p.Epoch, LastSequence: p.last().LastSeq,
			LastTimestamp: p.LastTimestamp})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (r *Replica) evictProducerIfFull(table map[int64]*producerEntry) {
	if len(table) < maxProducersPerPartition {
		return
	}
	var victim int64 = -1
	var oldest int64
	for id, p := range table {
		lo := p.last().LastOffset
		// Ties broken by id so the choice never depends on map order.
		if victim < 0 || lo < oldest || (lo == oldest && id < victim) {
			victim, oldest = id, lo
		}
	}
	r.hit(pProducerEvicted)
	delete(table, victim)
}

// producerSnapshot is the encoded form of the producer table.
type producerSnapshot struct {
	IDs     []int64         `json:"ids"`
	Entries []producerEntry `json:"entries"`
}

func encodeProducers(table map[int64]*producerEntry) []byte {
	ids := make([]int64, 0, len(table))
	for id := range table {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	s := producerSnapshot{IDs: ids}
	for _, id := range ids {
		s.Entries = append(s.Entries, *table[id])
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic("replica: producer snapshot does not encode: " + err.Error())
	}
	return b
}

func decodeProducers(data []byte) (map[int64]*producerEntry, error) {
	var s producerSnapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	out := make(map[int64]*producerEntry, len(s.IDs))
	for i, id := range s.IDs {
		if i < len(s.Entries) && len(s.Entries[i].Batches) > 0 {
			e := s.Entries[i]
			out[id] = &e
		}
	}
	return out, nil
}
