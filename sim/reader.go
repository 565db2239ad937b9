package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/linearizability"
)

// reader consumes every partition of one topic from offset 0 with long-polling
// fetches, occasionally jumping to a random offset or asking ListOffsets for the
// high-water mark. Every successful response is recorded as a read.
type reader struct {
	clientBase
	spec ReaderSpec
	num  int

	parts    []*rPart
	meta     topicMeta
	fetching bool
	listing  bool
	draining bool
	healedOK bool // a fetch succeeded after the heal
	sess     readerSession
	rot      int // clustered: the partition the next fetch starts from
}

type rPart struct {
	tp       core.TopicPartition
	pos      int64
	start    int64 // last known log start offset
	hwm      int64
	resetPos bool // ask ListOffsets(earliest) before fetching
}

func newReader(w *World, actor int32, num int, spec ReaderSpec) *reader {
	r := &reader{spec: spec, num: num}
	r.clientBase = newClientBase(w, actor, fmt.Sprintf("reader%d", num), r.pump)
	if r.rt != nil {
		r.rt.stale = &r.meta
	}
	return r
}

func (r *reader) start() { r.wakeIn(r.rnd.Between(0, 100) * ms) }

func (r *reader) heal() { r.draining = true; r.wakeIn(0) }

func (r *reader) busy() string {
	if r.draining && !r.healedOK && len(r.parts) > 0 {
		return r.name + " has not completed a fetch since the heal"
	}
	return ""
}

func (r *reader) pump() {
	if r.backingOff() {
		return
	}
	if r.w.now >= r.meta.next && !r.meta.busy {
		r.refreshMetadata()
	}
	if len(r.parts) == 0 || r.fetching || r.listing {
		return
	}
	var reset []*rPart
	for _, p := range r.parts {
		if p.resetPos {
			reset = append(reset, p)
		}
	}
	if len(reset) > 0 {
		r.listOffsets(reset, -2)
		return
	}
	if r.rnd.Chance(r.spec.ListChance) {
		r.listOffsets(r.parts, -1)
		return
	}
	r.fetch()
}

func (r *reader) refreshMetadata() {
	r.refreshPartitions(&r.meta, r.spec.Topic, r.spec.TimeoutMs, r.spec.BackoffMs, func(n int32) {
		for int32(len(r.parts)) < n {
			tp := core.TopicPartition{Topic: r.spec.Topic, Partition: int32(len(r.parts))}
			r.parts = append(r.parts, &rPart{tp: tp})
		}
	})
}

func (r *reader) fetch() {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = r.spec.MaxWaitMs
	req.MinBytes = r.spec.MinBytes
	req.MaxBytes = r.spec.MaxBytes
	partMax := r.spec.PartMax
	if r.spec.TinyChance > 0 && r.rnd.Chance(r.spec.TinyChance) {
		partMax, req.MaxBytes = tinyFetchLimits(r.rnd)
	}
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = r.spec.Topic
	lead := int32(-2)
	if r.rt != nil {
		r.rot++ // one leader's partitions per fetch: start from each in turn
	}
	for k := range r.parts {
		p := r.parts[(k+r.rot)%len(r.parts)]
		if !r.sameAs(&lead, p.tp) {
			continue
		}
		if r.rnd.Chance(r.spec.SeekChance) && p.hwm > p.start {
			p.pos = r.rnd.Between(p.start, p.hwm)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.tp.Partition
		rp.FetchOffset = p.pos
		rp.PartitionMaxBytes = partMax
		rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	sent := make([]int64, len(r.parts)) // the offsets asked, for the stall check
	for i, p := range r.parts {
		sent[i] = p.pos
	}
	if r.sessions() {
		r.sessionFields(req, &rt)
	}
	if len(rt.Partitions) > 0 {
		req.Topics = append(req.Topics, rt)
	}
	r.fetching = true
	call := r.w.now
	r.send(req, int64(r.spec.MaxWaitMs)+r.spec.TimeoutMs, func(resp kmsg.Response, err error) {
		r.fetching = false
		fr, _ := resp.(*kmsg.FetchResponse)
		if r.sessions() && !r.sessionAnswered(fr, err) {
			r.code("fetch", fr.ErrorCode)
			r.wakeIn(r.spec.BackoffMs * ms)
			return
		}
		if err != nil {
			r.wakeIn(r.spec.BackoffMs * ms)
			return
		}
		r.checkStall(req, sent, fr)
		r.fetched(call, fr)
		r.checkProgress(sent, fr)
	})
}

func (r *reader) fetched(call int64, resp *kmsg.FetchResponse) {
	r.code("fetch", resp.ErrorCode)
	backoff := resp.ErrorCode != 0
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			if rp.Partition < 0 || int(rp.Partition) >= len(r.parts) || t.Topic != r.spec.Topic {
				r.w.fail("anomaly", "%s: fetch answered for unknown partition %s-%d", r.name,
					t.Topic, rp.Partition)
				continue
			}
			if !r.fetchedPartition(call, r.parts[rp.Partition], rp) {
				backoff = true
			}
		}
	}
	if r.draining {
		r.healedOK = true
	}
	switch {
	case backoff:
		r.wakeIn(r.spec.BackoffMs * ms)
	case r.empty(resp):
		// Caught up: a client without long poll would spin; real ones wait a little.
		r.wakeIn(max(r.spec.IdleEveryMs, 20) * ms)
	default:
		r.wakeIn(r.spec.IdleEveryMs * ms)
	}
}

func (r *reader) empty(resp *kmsg.FetchResponse) bool {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if len(p.RecordBatches) > 0 {
				return false
			}
		}
	}
	return true
}

// fetchedPartition records one partition's answer; false asks for a backoff.
func (r *reader) fetchedPartition(call int64, p *rPart, rp *kmsg.FetchResponseTopicPartition) bool {
	r.code("fetch", rp.ErrorCode)
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		p.resetPos = true
		if rp.HighWatermark >= 0 {
			// The partition's current bounds (a topic re-created under the reader's feet
			// starts again at 0): a session lists it again only when they change.
			p.hwm = rp.HighWatermark
		}
		return true
	default:
		if rp.ErrorCode == kerr.UnknownTopicOrPartition.Code {
			r.meta.next = 0
		}
		return false
	}
	recs, err := r.w.decodeBatches(p.tp, rp.RecordBatches)
	if err != nil {
		r.w.failDecode(fmt.Sprintf("%s: fetch of %s at %d returned a bad batch", r.name, p.tp,
			p.pos), err)
		return false
	}
	r.w.record(linearizability.Op{Kind: linearizability.OpRead, Client: int(r.actor),
		TP: p.tp, Call: call, Return: r.w.now, Outcome: linearizability.OK,
		FetchOffset: p.pos, Records: recs, HWM: rp.HighWatermark,
		LogStart: rp.LogStartOffset})
	r.w.tr.note("read", rp.HighWatermark, int64(len(recs)))
	p.hwm = rp.HighWatermark
	if rp.LogStartOffset >= 0 {
		p.start = rp.LogStartOffset
	}
	if n := len(recs); n > 0 && recs[n-1].Offset >= p.pos {
		p.pos = recs[n-1].Offset + 1
	}
	return true
}

// decodeBatches decodes every whole batch of a fetch response. A trailing partial
// batch (allowed by the protocol when a size limit cuts it) is ignored. Every batch's
// CRC is checked; its records are decoded once per run and then reused (readers see the
// same batches many times), keys and values interned, so histories stay small.
func (w *World) decodeBatches(tp core.TopicPartition, raw []byte) ([]linearizability.Record,
	error) {
	var out []linearizability.Record
	for len(raw) >= batch.HeaderSize {
		h, err := batch.ParseHeader(raw)
		if err != nil {
			return out, err
		}
		if h.Size() > len(raw) {
			break
		}
		if err := checkServedCRC(raw[:h.Size()]); err != nil {
			return out, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		if _, err := batch.Check(raw[:h.Size()]); err != nil {
			return out, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		key := decodedKey{tp, h.BaseOffset, h.CRC, h.Size()}
		recs, ok := w.decoded[key]
		if !ok {
			kvs, err := strictRecords(raw[:h.Size()])
			if err != nil {
				return out, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
			}
			recs = make([]linearizability.Record, len(kvs))
			times := recordTimes(raw[:h.Size()])
			for i, kv := range kvs {
				recs[i] = linearizability.Record{Offset: h.BaseOffset + int64(i),
					Key: w.intern(kv.Key), Value: w.intern(kv.Value), Timestamp: -1}
				if len(times) == len(kvs) {
					recs[i].Timestamp = times[i]
				}
			}
			if len(recs) > 0 {
				recs[0].BatchBytes = int32(h.Size())
			}
			w.decoded[key] = recs
		}
		out = append(out, recs...)
		raw = raw[h.Size():]
	}
	return out, nil
}

// decodedKey identifies a batch whose CRC was verified: same place, same checksum,
// same size means the same records.
type decodedKey struct {
	tp   core.TopicPartition
	base int64
	crc  uint32
	size int
}

// intern returns the one copy of b's string.
func (w *World) intern(b []byte) string {
	if s, ok := w.strings[string(b)]; ok {
		return s
	}
	s := string(b)
	w.strings[s] = s
	return s
}

// listOffsets asks for the earliest (-2) or latest (-1) offset of parts. Latest
// answers are recorded as reads of the high-water mark.
func (r *reader) listOffsets(parts []*rPart, ts int64) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = r.spec.Topic
	lead := int32(-2)
	for _, p := range parts {
		if !r.sameAs(&lead, p.tp) {
			continue
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.tp.Partition, ts, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	r.listing = true
	call := r.w.now
	r.send(req, r.spec.TimeoutMs, func(resp kmsg.Response, err error) {
		r.listing = false
		if err != nil {
			r.wakeIn(r.spec.BackoffMs * ms)
			return
		}
		for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range t.Partitions {
				if t.Topic == r.spec.Topic && rp.Partition >= 0 && int(rp.Partition) < len(r.parts) {
					r.listed(call, r.parts[rp.Partition], ts, rp)
				}
			}
		}
		r.wakeIn(0)
	})
}

func (r *reader) listed(call int64, p *rPart, ts int64, rp kmsg.ListOffsetsResponseTopicPartition) {
	r.code("list-offsets", rp.ErrorCode)
	if rp.ErrorCode != 0 {
		return
	}
	if ts == -2 {
		p.pos, p.start, p.resetPos = rp.Offset, rp.Offset, false
		return
	}
	r.w.record(linearizability.Op{Kind: linearizability.OpRead, Client: int(r.actor),
		TP: p.tp, Call: call, Return: r.w.now, Outcome: linearizability.OK,
		FetchOffset: -1, HWM: rp.Offset})
	p.hwm = rp.Offset
}

// checkStall flags a fetch answered with no records at all while one of its partitions
// had records at the offset asked: the first partition with any must get its first
// batch whatever PartitionMaxBytes and MaxBytes say (KIP-74), or a consumer whose next
// batch is larger than its limits never moves again. Answers with an error anywhere
// prove nothing. Every answer's log start must not be above its high-water mark.
func (r *reader) checkStall(req *kmsg.FetchRequest, sent []int64, resp *kmsg.FetchResponse) {
	if resp.ErrorCode != 0 {
		return
	}
	behind, served := "", false
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			if rp.ErrorCode != 0 {
				return
			}
			if rp.LogStartOffset > rp.HighWatermark && rp.HighWatermark >= 0 {
				r.w.fail("anomaly", "log-start-past-hwm %s: fetch of %s-%d answered log start "+
					"%d above the high-water mark %d", r.name, t.Topic, rp.Partition,
					rp.LogStartOffset, rp.HighWatermark)
			}
			served = served || len(rp.RecordBatches) > 0
			n := int(rp.Partition)
			if behind == "" && n >= 0 && n < len(sent) && sent[n] < rp.HighWatermark &&
				sent[n] >= rp.LogStartOffset {
				behind = fmt.Sprintf("%s-%d at %d (log start %d, high-water mark %d)",
					t.Topic, rp.Partition, sent[n], rp.LogStartOffset, rp.HighWatermark)
			}
		}
	}
	if behind != "" && !served {
		partMax := int32(-1) // an incremental fetch may carry no partition
		if len(req.Topics) > 0 && len(req.Topics[0].Partitions) > 0 {
			partMax = req.Topics[0].Partitions[0].PartitionMaxBytes
		}
		r.w.fail("liveness", "fetch-stalled %s: a fetch (max bytes %d, partition max %d) "+
			"returned no records though %s had some", r.name, req.MaxBytes, partMax, behind)
	}
}
