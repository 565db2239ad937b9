package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/linearizability"
)

// zombie is an idempotent producer that bumps its epoch the way Kafka's idempotent
// producers do on their own (KIP-360: same producer id, epoch + 1, sequences from 0)
// while a copy of its previous session, a zombie, keeps sending. Each round, on one
// partition:
//
//  1. it writes a batch in its current epoch E and waits for the acknowledgement;
//  2. it bumps to E+1 and writes a batch there, again until acknowledged;
//  3. the zombie sends the batch session E would have sent next (epoch E, the next
//     sequence). The partition has seen E+1, so the broker must fence it with
//     INVALID_PRODUCER_EPOCH (or PRODUCER_FENCED) and write nothing. Any other answer
//     is an anomaly: an accepted zombie write, or one judged by its sequence number
//     against the newer epoch's. UNKNOWN_PRODUCER_ID is allowed (a restart may have
//     rebuilt the producer table from a log that no longer holds its batches), and
//     so is everything when the partition may have forgotten the newer epoch (the
//     topic was deleted meanwhile, or log.flush.policy=never let a crash take the
//     acknowledged write back).
//
// The legitimate writes and the zombie's are recorded like any producer's, so the
// checkers also see a fenced write that shows up in a read.
type zombie struct {
	clientBase
	spec     ZombieSpec
	parts    int32
	metaBusy bool
	busyReq  bool
	draining bool

	pid     int64
	epoch   int16
	session int // bumped with every epoch and producer id
	seqs    map[int32]*zSeq
	step    int // zOld, zNew, zStale
	tp      core.TopicPartition
	cur     *zWrite // the legitimate write being sent until acknowledged
	ghost   zGhost
	dels    int // deletions of the topic when the round began
	writes  int
}

// Round steps.
const (
	zOld = iota
	zNew
	zStale
)

// zSeq is the current session's state on one partition.
type zSeq struct {
	next    int32 // next sequence number
	writeNo int   // writes made, for the history's Seq
}

type zWrite struct {
	bytes   []byte
	op      int
	records int32
}

// zGhost is what the previous session would have sent next.
type zGhost struct {
	epoch   int16
	session int
	seq     int32
	writeNo int
}

// zombieName is the zombie producer's client name (and random stream).
const zombieName = "zombie"

func newZombie(w *World, actor int32, spec ZombieSpec) *zombie {
	z := &zombie{spec: spec, pid: -1}
	z.clientBase = newClientBase(w, actor, zombieName, z.pump)
	return z
}

func (z *zombie) start() { z.wakeIn(z.rnd.Between(0, 200) * ms) }
func (z *zombie) heal()  { z.draining = true }

// busy holds the final read back while a request is in flight: a write acknowledged
// after the final read began would be missing from it (seed 535).
func (z *zombie) busy() string {
	if z.busyReq || z.metaBusy {
		return z.name + " has a request in flight"
	}
	return ""
}

func (z *zombie) pump() {
	if z.draining || z.backingOff() || z.busyReq || z.metaBusy {
		return
	}
	switch {
	case z.parts == 0:
		z.metadata()
	case z.pid < 0:
		z.initProducerID()
	case z.step == zStale:
		z.sendGhost()
	default:
		if z.cur == nil {
			z.cur = z.newWrite()
		}
		z.sendWrite()
	}
}

func (z *zombie) metadata() {
	z.metaBusy = true
	z.requestMetadata([]string{z.spec.Topic}, z.spec.TimeoutMs,
		func(counts map[string]int32, err error) {
			z.metaBusy = false
			z.parts = counts[z.spec.Topic]
			z.wakeIn(z.spec.BackoffMs * ms)
		})
}

func (z *zombie) initProducerID() {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	z.busyReq = true
	z.send(req, z.spec.TimeoutMs, func(r kmsg.Response, err error) {
		z.busyReq = false
		if err == nil {
			resp := r.(*kmsg.InitProducerIDResponse)
			z.code("init-producer-id", resp.ErrorCode)
			if resp.ErrorCode == 0 {
				z.pid, z.epoch = resp.ProducerID, resp.ProducerEpoch
				z.w.pidHandedOut(z.name, z.pid, z.epoch)
				z.newSession()
				z.wakeIn(0)
				return
			}
		}
		z.wakeIn(z.spec.BackoffMs * ms)
	})
}

// newSession starts a session (a new producer id or epoch): sequences restart at 0.
func (z *zombie) newSession() {
	z.session++
	z.seqs = map[int32]*zSeq{}
	z.step, z.cur = zOld, nil
}

// newWrite makes the next legitimate batch: step zOld picks the round's partition,
// step zNew first bumps the epoch.
func (z *zombie) newWrite() *zWrite {
	if z.step == zOld {
		z.tp = core.TopicPartition{Topic: z.spec.Topic, Partition: int32(z.rnd.Intn(int(z.parts)))}
		z.dels = z.w.deleted[z.spec.Topic]
	} else {
		z.epoch++
		z.newSession()
		z.step = zNew
	}
	s := z.seq(z.tp.Partition)
	s.writeNo++
	z.writes++
	write := fmt.Sprintf("z.s%d.%s.%d", z.session, z.tp, s.writeNo)
	n := int32(1 + z.rnd.Intn(3))
	values, keys := z.records(write, n)
	b := &zWrite{records: n, bytes: z.build(z.epoch, s.next, values)}
	s.next += n
	b.op = z.w.record(linearizability.Op{Kind: linearizability.OpAppend,
		Client: int(z.actor), TP: z.tp, Call: z.w.now, Outcome: linearizability.Unknown,
		Write: write, Values: values, Keys: keys, Producer: int(z.actor),
		Session: z.session, Seq: s.writeNo, Built: z.w.now, Acks: -1, Idempotent: true,
		Offset: -1})
	return b
}

func (z *zombie) seq(part int32) *zSeq {
	s := z.seqs[part]
	if s == nil {
		s = &zSeq{}
		z.seqs[part] = s
	}
	return s
}

func (z *zombie) records(write string, n int32) (values, keys []string) {
	for i := int32(0); i < n; i++ {
		values = append(values, fmt.Sprintf("%s.%d", write, i))
		keys = append(keys, "z")
	}
	return values, keys
}

func (z *zombie) build(epoch int16, seq int32, values []string) []byte {
	kvs := make([]batch.KV, len(values))
	for i, v := range values {
		kvs[i] = batch.KV{Key: []byte("z"), Value: []byte(v)}
	}
	return batch.Build(kvs, batch.Producer{ID: z.pid, Epoch: epoch, BaseSequence: seq},
		(epochNs+z.w.now)/ms)
}

func (z *zombie) produce(records []byte, done func(code int16, offset int64)) {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, int32(z.spec.TimeoutMs)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = z.tp.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = z.tp.Partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	z.busyReq = true
	tp := z.tp
	z.send(req, z.spec.TimeoutMs+z.spec.TimeoutMs/2, func(r kmsg.Response, err error) {
		z.busyReq = false
		code, offset := int16(-1), int64(-1)
		if err == nil {
			for _, t := range r.(*kmsg.ProduceResponse).Topics {
				for _, p := range t.Partitions {
					if t.Topic == tp.Topic && p.Partition == tp.Partition {
						code, offset = p.ErrorCode, p.BaseOffset
					}
				}
			}
		}
		if code >= 0 {
			z.code("produce", code)
		}
		done(code, offset)
	})
}

// sendWrite sends the current legitimate write (again, after an unknown outcome: the
// broker deduplicates it).
func (z *zombie) sendWrite() {
	b := z.cur
	z.w.hist.Op(b.op).Attempts++
	z.produce(b.bytes, func(code int16, offset int64) {
		switch {
		case code == 0 || code == kerr.DuplicateSequenceNumber.Code:
			if code != 0 {
				offset = -1
			}
			z.w.resolve(b.op, linearizability.OK, offset, 0)
			z.cur = nil
			z.acknowledged()
		case code == -1 || retriable(code):
			z.wakeIn(z.spec.BackoffMs * ms)
		case code == kerr.OutOfOrderSequenceNumber.Code, code == kerr.UnknownProducerID.Code,
			code == kerr.InvalidProducerEpoch.Code, code == kerr.ProducerFenced.Code:
			// The partition lost track of the session (the topic was re-created, or its
			// batches are gone): start over with a new producer id, as producer.go does.
			z.pid, z.cur = -1, nil
			z.wakeIn(z.spec.BackoffMs * ms)
		default:
			z.w.fail("unexpected-error", "%s: produce to %s answered %s", z.name, z.tp,
				errName(code))
			z.w.resolve(b.op, linearizability.Failed, -1, code)
			z.pid, z.cur = -1, nil
			z.wakeIn(z.spec.BackoffMs * ms)
		}
	})
}

// acknowledged moves the round on after a legitimate write was acknowledged.
func (z *zombie) acknowledged() {
	if z.step == zOld {
		s := z.seq(z.tp.Partition)
		z.ghost = zGhost{epoch: z.epoch, session: z.session, seq: s.next, writeNo: s.writeNo + 1}
		z.step = zNew
		if z.epoch == 1<<15-1 {
			z.pid = -1 // no epoch left to bump to: a new producer id
			return
		}
		z.wakeIn(0)
		return
	}
	z.step = zStale
	z.wakeIn(0)
}

// sendGhost sends the zombie's batch and judges the answer.
func (z *zombie) sendGhost() {
	g := z.ghost
	write := fmt.Sprintf("z.s%d.%s.%d", g.session, z.tp, g.writeNo)
	n := int32(1 + z.rnd.Intn(3))
	values, keys := z.records(write, n)
	op := z.w.record(linearizability.Op{Kind: linearizability.OpAppend, Client: int(z.actor),
		TP: z.tp, Call: z.w.now, Outcome: linearizability.Unknown, Write: write,
		Values: values, Keys: keys, Producer: int(z.actor), Session: g.session,
		Seq: g.writeNo, Built: z.w.now, Acks: -1, Idempotent: true, Offset: -1, Attempts: 1})
	tp := z.tp
	z.produce(z.build(g.epoch, g.seq, values), func(code int16, offset int64) {
		z.ghostAnswered(tp, g, op, code, offset)
		// The next round continues in the current epoch.
		z.step = zOld
		z.wakeIn(z.rnd.Exp(ms, z.spec.EveryMs*ms))
	})
}

func (z *zombie) ghostAnswered(tp core.TopicPartition, g zGhost, op int, code int16,
	offset int64) {
	z.w.tr.note("zombie", int64(g.epoch), int64(code), offset)
	checked := z.w.cfg.Broker["log.flush.policy"] != "never" &&
		z.w.deleted[tp.Topic] == z.dels
	switch {
	case code == -1 || retriable(code):
		return // nothing learnt: the write stays unknown
	case code == kerr.InvalidProducerEpoch.Code, code == kerr.ProducerFenced.Code,
		code == kerr.UnknownProducerID.Code:
		z.w.resolve(op, linearizability.Failed, -1, code)
		return
	case code == 0:
		z.w.resolve(op, linearizability.OK, offset, 0)
	case code == kerr.OutOfOrderSequenceNumber.Code:
		z.w.resolve(op, linearizability.Failed, -1, code)
	}
	if !checked {
		return
	}
	if code == 0 {
		z.w.fail("anomaly", "zombie-accepted %s: a batch of producer %d epoch %d (sequence "+
			"%d) was accepted by %s at offset %d after epoch %d wrote there", z.name, z.pid,
			g.epoch, g.seq, tp, offset, g.epoch+1)
		return
	}
	z.w.fail("anomaly", "zombie-not-fenced %s: a batch of producer %d epoch %d (sequence "+
		"%d) to %s after epoch %d wrote there was answered %s, not INVALID_PRODUCER_EPOCH",
		z.name, z.pid, g.epoch, g.seq, tp, g.epoch+1, errName(code))
}
