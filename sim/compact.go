package sim

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
)

// The compaction workload (docs/simulation.md, "Compaction"). On about 30% of seeds the
// world runs a compacted topic of its own, compactTopic (cleanup.policy=compact or
// compact,delete, small segments, a small min.compaction.lag.ms and delete.retention.ms,
// a cleaner pass every few hundred milliseconds), outside Config.Topics: the queue
// checkers of package linearizability would call every record the cleaner removes lost.
// A writer (cWriter) writes keyed records, overwrites and tombstones one at a time with
// acks=all; a reader (cReader) reads the partition from its log start again and again,
// under every fault, and once more after the heal. compactcheck.go checks each read.

// compactTopic is the compaction workload's own topic: no other client touches it.
const compactTopic = "compacted"

// CompactSpec configures the compaction workload.
type CompactSpec struct {
	On              bool
	Policy          string // cleanup.policy: "compact" or "compact,delete"
	Keys            int    // distinct keys
	EveryMs         int64  // mean time between writes
	TombstoneChance float64
	ReadEveryMs     int64 // mean time between reads from the log start
	LagMs           int64 // min.compaction.lag.ms
	RetentionMs     int64 // delete.retention.ms
	SegmentBytes    int64 // segment.bytes
	DirtyRatio      string
	BackoffMs       int64 // log.cleaner.backoff.ms (a broker setting)
	TimeoutMs       int64
}

// drawCompact draws the workload, after every older choice; its parameters are drawn
// whether or not it is on, so a later draw does not depend on the switch.
func drawCompact(r *Rand, c *Config) {
	on := r.Chance(0.3)
	c.Compact = CompactSpec{Policy: Pick(r, "compact", "compact", "compact,delete"),
		Keys: Pick(r, 5, 20, 50), EveryMs: Pick[int64](r, 5, 10, 25),
		TombstoneChance: Pick(r, 0.05, 0.2), ReadEveryMs: Pick[int64](r, 200, 600, 1500),
		LagMs: Pick[int64](r, 100, 400, 1200), RetentionMs: Pick[int64](r, 200, 800, 2500),
		SegmentBytes: Pick[int64](r, 1024, 2048, 4096), DirtyRatio: Pick(r, "0.01", "0.3"),
		BackoffMs: Pick[int64](r, 100, 250, 500), TimeoutMs: Pick[int64](r, 1000, 3000)}
	c.setCompact(on)
}

// drawOffsetsCleaning gives __consumer_offsets small segments
// (offsets.topic.segment.bytes) and the cleaner a short backoff on half the seeds, so
// that the log cleaner compacts the offsets partitions committers and group members
// write, under crashes and coordinator moves, and the group and committer checkers
// read what a coordinator replays from cleaned logs. Tombstones keep Kafka's 24 h
// delete.retention.ms, beyond a run. Drawn after every older choice; --set wins.
func drawOffsetsCleaning(r *Rand, c *Config) {
	on := r.Chance(0.5)
	segment := Pick(r, 1024, 4096, 16384)
	backoff := Pick(r, 100, 250, 1000)
	if !on {
		return
	}
	if _, set := c.Broker["offsets.topic.segment.bytes"]; !set {
		c.Broker["offsets.topic.segment.bytes"] = strconv.Itoa(segment)
	}
	if _, set := c.Broker["log.cleaner.backoff.ms"]; !set {
		c.Broker["log.cleaner.backoff.ms"] = strconv.Itoa(backoff)
	}
}

// setCompact turns the workload on or off; on sets the cleaner's broker setting unless
// --set gave one.
func (c *Config) setCompact(on bool) {
	c.Compact.On = on
	if c.Compact.Keys == 0 {
		c.Compact = CompactSpec{Policy: "compact", Keys: 20, EveryMs: 10,
			TombstoneChance: 0.2, ReadEveryMs: 600, LagMs: 400, RetentionMs: 800,
			SegmentBytes: 2048, DirtyRatio: "0.01", BackoffMs: 250, TimeoutMs: 1000, On: on}
	}
	if _, set := c.Broker["log.cleaner.backoff.ms"]; on && !set {
		c.Broker["log.cleaner.backoff.ms"] = strconv.FormatInt(c.Compact.BackoffMs, 10)
	}
}

// configs are the compacted topic's settings.
func (s CompactSpec) configs() map[string]string {
	m := map[string]string{"cleanup.policy": s.Policy,
		"segment.bytes":             strconv.FormatInt(s.SegmentBytes, 10),
		"min.compaction.lag.ms":     strconv.FormatInt(s.LagMs, 10),
		"delete.retention.ms":       strconv.FormatInt(s.RetentionMs, 10),
		"min.cleanable.dirty.ratio": s.DirtyRatio}
	if s.Policy != "compact" {
		// compact,delete: retention runs, but nothing it may delete ages within a run.
		m["retention.ms"], m["retention.bytes"] = "3600000", "-1"
	}
	return m
}

func (s CompactSpec) String() string {
	return fmt.Sprintf("policy=%s keys=%d every~%dms tombstones=%.2f reads every~%dms "+
		"lag=%dms delete.retention=%dms segment=%dB dirty=%s cleaner.backoff=%dms",
		s.Policy, s.Keys, s.EveryMs, s.TombstoneChance, s.ReadEveryMs, s.LagMs,
		s.RetentionMs, s.SegmentBytes, s.DirtyRatio, s.BackoffMs)
}

// cWriter creates the compacted topic, then writes one record at a time: a value for a
// random key, or with TombstoneChance a tombstone, each acks=all, never retried (the
// next write simply follows; a write whose outcome is unknown may land later).
type cWriter struct {
	clientBase
	st       *compactState
	meta     topicMeta
	parts    int32
	busyReq  bool
	draining bool
	nextAt   int64
}

func newCWriter(w *World, actor int32, st *compactState) *cWriter {
	cw := &cWriter{st: st}
	cw.clientBase = newClientBase(w, actor, "compact-writer", cw.pump)
	if cw.rt != nil {
		cw.rt.stale = &cw.meta
	}
	return cw
}

func (cw *cWriter) start() { cw.wakeIn(cw.rnd.Between(0, 100) * ms) }
func (cw *cWriter) heal()  { cw.draining = true }

func (cw *cWriter) busy() string {
	if cw.busyReq {
		return cw.name + " has a write in flight"
	}
	return ""
}

func (cw *cWriter) pump() {
	if cw.backingOff() || cw.busyReq || cw.meta.busy {
		return
	}
	switch {
	case !cw.st.created:
		if cw.rt != nil && cw.rt.ctl < 0 {
			cw.learnController()
			return
		}
		cw.createTopic()
	case cw.draining:
	case cw.parts == 0 || (cw.rt != nil && cw.meta.next <= cw.w.now):
		cw.refreshPartitions(&cw.meta, compactTopic, cw.st.spec.TimeoutMs, 100,
			func(n int32) { cw.parts = n })
	case cw.w.now < cw.nextAt:
		cw.wakeIn(cw.nextAt - cw.w.now)
	default:
		cw.write()
	}
}

// learnController asks for metadata of no topic in particular (naming the compacted
// topic could auto-create it, uncompacted, before CreateTopics): the answer names the
// controller.
func (cw *cWriter) learnController() {
	cw.meta.busy = true
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	req.AllowAutoTopicCreation = false
	cw.send(req, cw.st.spec.TimeoutMs, func(_ kmsg.Response, err error) {
		cw.meta.busy = false
		if err != nil {
			cw.backoffUntil = cw.w.now + 100*ms
		}
		cw.wakeIn(cw.backoffUntil - cw.w.now)
	})
}

func (cw *cWriter) createTopic() {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(cw.st.spec.TimeoutMs)
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions = compactTopic, 1
	rt.ReplicationFactor = cw.w.cfg.replicationFactor()
	cfgs := cw.st.spec.configs()
	names := make([]string, 0, len(cfgs))
	for k := range cfgs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(cfgs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	cw.busyReq = true
	cw.send(req, cw.st.spec.TimeoutMs, func(r kmsg.Response, err error) {
		cw.busyReq = false
		if err == nil {
			for _, t := range r.(*kmsg.CreateTopicsResponse).Topics {
				cw.code("create-topics", t.ErrorCode)
				if t.ErrorCode == 0 || t.ErrorCode == kerr.TopicAlreadyExists.Code {
					cw.st.created = true
				}
			}
		}
		if !cw.st.created {
			cw.backoffUntil = cw.w.now + 100*ms
		}
		cw.wakeIn(cw.backoffUntil - cw.w.now)
	})
}

func (cw *cWriter) write() {
	s := cw.st.spec
	wr := cw.st.newWrite(cw.rnd.Intn(s.Keys), cw.rnd.Chance(s.TombstoneChance), cw.w.now)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, int32(s.TimeoutMs)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = compactTopic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = compactBatch(wr, (epochNs+cw.w.now)/ms)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	cw.busyReq = true
	cw.send(req, s.TimeoutMs+s.TimeoutMs/2, func(r kmsg.Response, err error) {
		cw.busyReq = false
		cw.nextAt = cw.w.now + cw.rnd.Exp(ms, s.EveryMs*ms)
		code := int16(-1)
		var offset int64 = -1
		if err == nil {
			for _, t := range r.(*kmsg.ProduceResponse).Topics {
				for _, p := range t.Partitions {
					code, offset = p.ErrorCode, p.BaseOffset
				}
			}
			cw.code("produce", code)
		}
		if code == 0 {
			cw.st.acked(wr, offset)
		} else {
			cw.st.stats.Unknown++ // an error or no answer: it may be in the log or not
			cw.nextAt = max(cw.nextAt, cw.w.now+50*ms)
		}
		cw.w.tr.note("compact-write", int64(wr.id), offset, int64(code))
		cw.wakeIn(cw.nextAt - cw.w.now)
	})
}

// compactBatch is wr's one-record batch: key c<key>, value c<key>.w<id> (none for a
// tombstone), and the write's id in header "w", which the cleaner keeps with the record.
func compactBatch(wr *cWrite, tsMs int64) []byte {
	r := kmsg.Record{Key: []byte(compactKey(wr.key)), Value: wr.value(),
		Headers: []kmsg.Header{{Key: "w", Value: []byte(strconv.Itoa(wr.id))}}}
	enc := r.AppendTo(nil)
	r.Length = int32(len(enc) - 1)
	enc = r.AppendTo(nil)
	for varintSize(int64(r.Length)) != len(enc)-int(r.Length) {
		r.Length = int32(len(enc) - varintSize(int64(r.Length)))
		enc = r.AppendTo(nil)
	}
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, FirstTimestamp: tsMs,
		MaxTimestamp: tsMs, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: 1, Records: enc}
	rb.Length = int32(batch.HeaderSize - 12 + len(enc))
	b := rb.AppendTo(nil)
	crc := batch.ComputeCRC(b)
	b[17], b[18], b[19], b[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return b
}

func compactKey(k int) string { return "c" + strconv.Itoa(k) }

// cReader reads the compacted partition from its log start to at least the highest
// high-water mark any of its fetches reported, ~ReadEveryMs apart; after the heal it
// waits for the writer to settle and reads once more (the final compacted read), which
// the run waits for. A read that takes longer than compactReadMaxMs during the faults
// is abandoned unchecked.
type cReader struct {
	clientBase
	st        *compactState
	meta      topicMeta
	parts     int32
	busyReq   bool
	draining  bool
	finalDone bool
	nextAt    int64
	rd        *cRead
}

// compactReadMaxMs bounds a read made during the faults.
const compactReadMaxMs = 5000

func newCReader(w *World, actor int32, st *compactState) *cReader {
	cr := &cReader{st: st}
	cr.clientBase = newClientBase(w, actor, "compact-reader", cr.pump)
	if cr.rt != nil {
		cr.rt.stale = &cr.meta
	}
	return cr
}

func (cr *cReader) start() {
	cr.nextAt = cr.rnd.Between(100, 400) * ms
	cr.wakeIn(cr.nextAt)
}

func (cr *cReader) heal() { cr.draining = true; cr.wakeIn(0) }

func (cr *cReader) busy() string {
	if cr.draining && !cr.finalDone && cr.st.created {
		return cr.name + " has not finished its final read from the log start"
	}
	return ""
}

func (cr *cReader) pump() {
	if cr.backingOff() || cr.busyReq || cr.meta.busy || !cr.st.created {
		if !cr.st.created && !cr.busyReq {
			cr.wakeIn(100 * ms)
		}
		return
	}
	if cr.parts == 0 || (cr.rt != nil && cr.meta.next <= cr.w.now) {
		cr.refreshPartitions(&cr.meta, compactTopic, cr.st.spec.TimeoutMs, 100,
			func(n int32) { cr.parts = n })
		return
	}
	switch {
	case cr.rd == nil && cr.draining:
		if cr.finalDone {
			return
		}
		if cr.st.writer.busy() != "" {
			cr.wakeIn(50 * ms)
			return
		}
		cr.rd = cr.st.newRead(cr.w.now, true)
	case cr.rd == nil:
		if cr.w.now < cr.nextAt {
			cr.wakeIn(cr.nextAt - cr.w.now)
			return
		}
		cr.rd = cr.st.newRead(cr.w.now, false)
	case !cr.rd.final && cr.w.now-cr.rd.started > compactReadMaxMs*ms:
		cr.st.stats.Abandoned++
		cr.endRead()
		return
	}
	cr.fetch()
}

func (cr *cReader) endRead() {
	if cr.rd.final {
		cr.finalDone = true
	}
	cr.rd = nil
	cr.nextAt = cr.w.now + cr.rnd.Exp(ms, cr.st.spec.ReadEveryMs*ms)
	cr.wakeIn(cr.nextAt - cr.w.now)
}

func (cr *cReader) fetch() {
	rd := cr.rd
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	req.SessionID, req.SessionEpoch = 0, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = compactTopic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes = rd.pos, 64<<10
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	cr.busyReq = true
	cr.send(req, cr.st.spec.TimeoutMs, func(r kmsg.Response, err error) {
		cr.busyReq = false
		if err != nil || cr.rd != rd {
			cr.wakeIn(50 * ms)
			return
		}
		resp := r.(*kmsg.FetchResponse)
		cr.code("fetch", resp.ErrorCode)
		var part *kmsg.FetchResponseTopicPartition
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if p := &resp.Topics[i].Partitions[j]; resp.Topics[i].Topic == compactTopic &&
					p.Partition == 0 {
					part = p
				}
			}
		}
		if resp.ErrorCode != 0 || part == nil || part.ErrorCode != 0 {
			if part != nil {
				cr.code("fetch", part.ErrorCode)
				cr.st.logStart(cr.name, part.LogStartOffset)
			}
			cr.wakeIn(50 * ms)
			return
		}
		cr.st.logStart(cr.name, part.LogStartOffset)
		before := rd.pos
		if !cr.st.fetched(rd, part.RecordBatches, part.HighWatermark, cr.w.now) {
			cr.endRead() // a bad batch: reported; this read ends
			return
		}
		if rd.pos >= rd.maxHWM {
			cr.st.check(rd, cr.w.now)
			cr.endRead()
			return
		}
		if rd.pos == before {
			cr.wakeIn(20 * ms) // the leader's high-water mark lags the one seen: wait
			return
		}
		cr.wakeIn(0)
	})
}

// buildCompact adds the workload's two clients.
func (w *World) buildCompact(actor int32) int32 {
	w.compact = newCompactState(w)
	actor++
	w.compact.writer = newCWriter(w, actor, w.compact)
	actor++
	w.clients = append(w.clients, w.compact.writer, newCReader(w, actor, w.compact))
	return actor
}

// compactTP is the compacted partition.
var compactTP = core.TopicPartition{Topic: compactTopic}
