package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/linearizability"
)

// finalReader runs once the faults have healed and the producers drained: it learns
// every partition, asks for its log start and high-water mark, and reads everything in
// between. Its reads are the ground truth for "every acknowledged write is readable".
type finalReader struct {
	clientBase
	parts    []*fPart
	step     int // 0: metadata, 1: earliest, 2: latest, 3: fetching, 4: done
	inFlight bool
	advanced int64 // virtual time its read position last moved
	relearn  bool  // clustered: a request failed; ask where the leaders are first
}

type fPart struct {
	tp         core.TopicPartition
	start, end int64
	pos        int64
	lagSince   int64 // clustered: since when the high-water mark is below pos (0: not)
}

func newFinalReader(w *World, actor int32) *finalReader {
	f := &finalReader{}
	f.clientBase = newClientBase(w, actor, "final-reader", f.pump)
	return f
}

func (f *finalReader) start() { f.wakeIn(0) }

func (f *finalReader) progress() string {
	if f == nil {
		return "the producers never drained"
	}
	return fmt.Sprintf("final reader at step %d of 4 over %d partitions", f.step, len(f.parts))
}

// stillReading reports whether the final read is fetching and moved within the last
// window: a long log read in small fetches is slow, not stuck.
func (f *finalReader) stillReading(now, window int64) bool {
	return f != nil && f.step == 3 && now-f.advanced < window
}

func (f *finalReader) retry() {
	f.inFlight = false
	f.relearn = f.rt != nil && f.step > 0
	f.wakeIn(100 * ms)
}

// refresh asks for metadata again (clustered: a leader moved or is unknown), keeping
// the partitions and the step; the answer updates the router.
func (f *finalReader) refresh() {
	var names []string
	for _, t := range f.w.cfg.Topics {
		names = append(names, t.Name)
	}
	f.requestMetadata(names, 5000, func(_ map[string]int32, err error) {
		f.inFlight = false
		if err == nil {
			f.relearn = false
		}
		f.wakeIn(0)
	})
}

func (f *finalReader) pump() {
	if f.backingOff() || f.inFlight {
		return
	}
	f.inFlight = true
	if f.relearn {
		f.refresh()
		return
	}
	switch f.step {
	case 0:
		f.metadata()
	case 1, 2:
		f.list(int64(f.step) - 3) // earliest (-2), then latest (-1)
	case 3:
		f.fetchNext()
	default:
		f.inFlight = false
	}
}

func (f *finalReader) metadata() {
	var names []string
	for _, t := range f.w.cfg.Topics {
		names = append(names, t.Name)
	}
	f.requestMetadata(names, 5000, func(c map[string]int32, err error) {
		if err != nil {
			f.retry()
			return
		}
		f.parts = nil
		for _, name := range names {
			for p := int32(0); p < c[name]; p++ {
				f.parts = append(f.parts, &fPart{tp: core.TopicPartition{Topic: name, Partition: p}})
			}
		}
		f.advance()
	})
}

func (f *finalReader) advance() {
	f.step++
	f.inFlight = false
	if f.step == 3 {
		for _, p := range f.parts {
			p.pos = p.start
		}
	}
	f.wakeIn(0)
}

func (f *finalReader) list(ts int64) {
	if f.rt != nil {
		f.listEach(ts)
		return
	}
	f.listParts(ts, f.parts, f.advance)
}

// listEach lists each partition in a request of its own (clustered: each goes to its
// leader), advancing once every one answered, retrying the whole step otherwise.
func (f *finalReader) listEach(ts int64) {
	left, failed := len(f.parts), false
	for _, p := range f.parts {
		f.listParts(ts, []*fPart{p}, func() {
			left--
			switch {
			case left > 0:
			case failed:
				f.retry()
			default:
				f.advance()
			}
		}, func() {
			left--
			failed = true
			if left == 0 {
				f.retry()
			}
		})
	}
	if len(f.parts) == 0 {
		f.advance()
	}
}

// listParts lists parts in one request; ok runs when every one answered, else fail
// (by default retry).
func (f *finalReader) listParts(ts int64, parts []*fPart, ok func(), fail ...func()) {
	retry := f.retry
	if len(fail) > 0 {
		retry = fail[0]
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for _, p := range parts {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = p.tp.Topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.tp.Partition, ts, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	call := f.w.now
	f.send(req, 5000, func(r kmsg.Response, err error) {
		if err != nil {
			retry()
			return
		}
		for _, t := range r.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range t.Partitions {
				p := f.find(t.Topic, rp.Partition)
				if p == nil || rp.ErrorCode != 0 {
					f.code("final-list-offsets", rp.ErrorCode)
					retry()
					return
				}
				if ts == -2 {
					p.start = rp.Offset
				} else {
					p.end = rp.Offset
					f.w.record(linearizability.Op{Kind: linearizability.OpRead,
						Client: int(f.actor), TP: p.tp, Call: call, Return: f.w.now,
						Outcome: linearizability.OK, FetchOffset: -1, HWM: rp.Offset,
						Final: true})
				}
			}
		}
		ok()
	})
}

// relist asks for p's log start again and resumes reading from there.
func (f *finalReader) relist(p *fPart) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = p.tp.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.tp.Partition, -2, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	f.send(req, 5000, func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.ListOffsetsResponse).Topics {
				for _, rp := range t.Partitions {
					if rp.ErrorCode == 0 && rp.Offset > p.pos {
						p.start, p.pos = rp.Offset, rp.Offset
					}
				}
			}
		}
		f.retry()
	})
}

func (f *finalReader) find(topic string, part int32) *fPart {
	for _, p := range f.parts {
		if p.tp.Topic == topic && p.tp.Partition == part {
			return p
		}
	}
	return nil
}

// fetchNext reads the first partition not yet read to its end.
func (f *finalReader) fetchNext() {
	var p *fPart
	for _, q := range f.parts {
		if q.pos < q.end {
			p = q
			break
		}
	}
	if p == nil {
		f.step = 4
		f.inFlight = false
		if f.w.clustered() {
			f.w.finalRead = true
			f.w.awaitReplication()
			return
		}
		f.w.finish()
		return
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = p.tp.Topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.tp.Partition, p.pos, 1<<20
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	call := f.w.now
	f.send(req, 5000, func(r kmsg.Response, err error) {
		if err != nil {
			f.retry()
			return
		}
		f.fetched(p, call, r.(*kmsg.FetchResponse))
	})
}

func (f *finalReader) fetched(p *fPart, call int64, resp *kmsg.FetchResponse) {
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		f.retry()
		return
	}
	rp := &resp.Topics[0].Partitions[0]
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		// Retention moved the log start meanwhile: what is gone is no longer checked.
		f.relist(p)
		return
	default:
		f.code("final-fetch", rp.ErrorCode)
		f.retry()
		return
	}
	recs, err := f.w.decodeBatches(p.tp, rp.RecordBatches)
	if err != nil {
		f.w.failDecode(fmt.Sprintf("final read of %s at %d: bad batch", p.tp, p.pos), err)
		f.retry()
		return
	}
	f.w.record(linearizability.Op{Kind: linearizability.OpRead, Client: int(f.actor),
		TP: p.tp, Call: call, Return: f.w.now, Outcome: linearizability.OK,
		FetchOffset: p.pos, Records: recs, HWM: rp.HighWatermark,
		LogStart: rp.LogStartOffset, Final: true})
	if n := len(recs); n > 0 && recs[n-1].Offset >= p.pos {
		p.pos = recs[n-1].Offset + 1
		f.advanced, p.lagSince = f.w.now, 0
	} else if rp.HighWatermark <= p.pos {
		if f.w.clustered() && f.newLeaderLags(p) {
			return
		}
		p.end = p.pos // the high-water mark went back: what was promised is not there
	}
	f.inFlight = false
	f.wakeIn(0)
}

// finalLagWaitMs bounds how long the final read waits for a high-water mark below the
// one it listed to catch up.
const finalLagWaitMs = 5000

// newLeaderLags: in a cluster a high-water mark below the one listed before is a new
// leader's that has not yet heard from its followers (Kafka's Fetch serves it; only
// ListOffsets waits, KIP-207): the read asks again, for a while, before it concludes
// that what was promised is not there.
func (f *finalReader) newLeaderLags(p *fPart) bool {
	if p.lagSince == 0 {
		p.lagSince = f.w.now
	}
	if f.w.now-p.lagSince >= finalLagWaitMs*ms {
		return false
	}
	f.inFlight = false
	f.wakeIn(100 * ms)
	return true
}

// finals reports the ranges read completely.
func (f *finalReader) finals() []linearizability.Final {
	if f.step < 4 {
		return nil
	}
	out := make([]linearizability.Final, 0, len(f.parts))
	for _, p := range f.parts {
		out = append(out, linearizability.Final{TP: p.tp, Start: p.start, End: p.end})
	}
	return out
}
