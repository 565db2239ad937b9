package sim

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/linearizability"
)

// producer writes uniquely valued records to one topic, as a Kafka producer would:
// batching, keys, acks 0/1/all, optional idempotence (producer id + sequence numbers),
// up to MaxInFlight batches per partition, and retries of the same batch bytes after a
// timeout, a reset or a retriable error.
type producer struct {
	clientBase
	spec ProducerSpec
	num  int

	parts []*pPart
	meta  topicMeta

	pid      int64
	epoch    int16
	initBusy bool
	session  int // bumped when idempotent state is abandoned (new producer id)

	draining bool
	resets   int
}

// pPart is one partition's queue of unacknowledged batches, in sequence order.
type pPart struct {
	tp       core.TopicPartition
	nextSeq  int32
	writes   int
	queue    []*pBatch
	inflight int
	// acked: a write of the current session was acknowledged here, when the topic had
	// been deleted ackDels times. The partition must remember the session from then on.
	acked   bool
	ackDels int
	// ackBase is the highest base offset acknowledged here in the current session.
	ackBase int64
}

type pBatch struct {
	write    string
	writeNo  int
	values   []string
	keys     []string
	bytes    []byte
	built    int64 // virtual time the batch was made (its CreateTime)
	inflight bool
	sent     bool
	opID     int  // idempotent: the one op covering every attempt
	unknown  bool // some attempt's outcome is unknown
	// sentDels is how often the topic had been deleted when the batch was first sent.
	sentDels int
}

func newProducer(w *World, actor int32, num int, spec ProducerSpec) *producer {
	p := &producer{spec: spec, num: num, pid: -1}
	p.clientBase = newClientBase(w, actor, fmt.Sprintf("producer%d", num), p.pump)
	if p.rt != nil {
		p.rt.stale = &p.meta
	}
	return p
}

func (p *producer) start() {
	p.wakeIn(p.rnd.Between(0, 50) * ms)
	p.tick()
}

func (p *producer) heal() { p.draining = true; p.wakeIn(0) }

func (p *producer) busy() string {
	n := 0
	for _, pp := range p.parts {
		n += len(pp.queue)
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%s has %d unacknowledged batches", p.name, n)
}

// tick makes a new batch now and then, during the safety phase.
func (p *producer) tick() {
	if p.draining {
		return
	}
	p.w.after(p.rnd.Exp(ms, p.spec.IntervalMs*ms), KindClientWake, p.actor, 0, 2, p.tick)
	if len(p.parts) == 0 || (p.spec.Idempotent && p.pid < 0) {
		p.pump()
		return
	}
	pp := p.parts[p.rnd.Intn(len(p.parts))]
	if len(pp.queue) < p.spec.QueueMax {
		pp.queue = append(pp.queue, p.newBatch(pp))
	}
	p.pump()
}

func (p *producer) newBatch(pp *pPart) *pBatch {
	pp.writes++
	b := &pBatch{writeNo: pp.writes, opID: -1, built: p.w.now,
		write: fmt.Sprintf("p%d.s%d.%s.%d", p.num, p.session, pp.tp, pp.writes)}
	n := 1 + p.rnd.Intn(p.spec.BatchMax)
	kvs := make([]batch.KV, n)
	for i := range kvs {
		key := fmt.Sprintf("k%d", p.rnd.Intn(p.spec.Keys))
		val := fmt.Sprintf("%s.%d", b.write, i)
		kvs[i] = batch.KV{Key: []byte(key), Value: []byte(val)}
		b.keys, b.values = append(b.keys, key), append(b.values, val)
	}
	prod := batch.NoProducer
	if p.spec.Idempotent {
		prod = batch.Producer{ID: p.pid, Epoch: p.epoch, BaseSequence: pp.nextSeq}
		pp.nextSeq += int32(n)
	}
	b.bytes = batch.Build(kvs, prod, (epochNs+p.w.now)/ms)
	return b
}

// pump sends whatever can be sent now.
func (p *producer) pump() {
	if p.backingOff() {
		return
	}
	if p.w.now >= p.meta.next && !p.meta.busy {
		p.refreshMetadata()
	}
	if len(p.parts) == 0 {
		return
	}
	if p.spec.Idempotent && p.pid < 0 {
		p.initProducerID()
		return
	}
	for i := 0; i < 16; i++ {
		if !p.sendOne() {
			return
		}
	}
	p.wakeIn(ms) // more to send: continue after a breath instead of looping unbounded
}

func (p *producer) refreshMetadata() {
	p.refreshPartitions(&p.meta, p.spec.Topic, p.spec.TimeoutMs, p.spec.BackoffMs, func(n int32) {
		for int32(len(p.parts)) < n {
			tp := core.TopicPartition{Topic: p.spec.Topic, Partition: int32(len(p.parts))}
			p.parts = append(p.parts, &pPart{tp: tp})
		}
	})
}

func (p *producer) initProducerID() {
	if p.initBusy {
		return
	}
	p.initBusy = true
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	p.send(req, p.spec.TimeoutMs, func(r kmsg.Response, err error) {
		p.initBusy = false
		if err == nil {
			resp := r.(*kmsg.InitProducerIDResponse)
			p.code("init-producer-id", resp.ErrorCode)
			if resp.ErrorCode == 0 {
				p.pid, p.epoch = resp.ProducerID, resp.ProducerEpoch
				p.w.pidHandedOut(p.name, p.pid, p.epoch)
				if p.w.logging() {
					p.w.logf(p.name, "producer id %d epoch %d", p.pid, p.epoch)
				}
				p.wakeIn(0)
				return
			}
		}
		p.wakeIn(p.spec.BackoffMs * ms)
	})
}

// pidHandedOut checks that no producer id and epoch is ever handed out twice: two
// sessions sharing one would corrupt each other's sequence numbers. Producer ids come
// from committed blocks, so a block whose proposal failed must not be used.
func (w *World) pidHandedOut(who string, pid int64, epoch int16) {
	k := [2]int64{pid, int64(epoch)}
	if prev, ok := w.pids[k]; ok {
		w.fail("anomaly", "producer id %d epoch %d handed to %s, already given to %s",
			pid, epoch, who, prev)
		return
	}
	if len(w.pids) < maxTrackedPIDs {
		w.pids[k] = who
	}
}

// maxTrackedPIDs bounds the producer ids remembered for the uniqueness check.
const maxTrackedPIDs = 1 << 16

// sendable returns the partition's next batch to send, or nil. Idempotent producers
// resend a failed batch only once nothing is in flight, so batches reach the broker in
// sequence order.
func (p *producer) sendable(pp *pPart) *pBatch {
	if pp.inflight >= p.spec.MaxInFlight {
		return nil
	}
	for _, b := range pp.queue {
		if b.inflight {
			continue
		}
		if p.spec.Idempotent && b.sent && pp.inflight > 0 {
			return nil
		}
		return b
	}
	return nil
}

// sendOne sends one Produce request covering up to PartsPerReq partitions.
func (p *producer) sendOne() bool {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = p.spec.Acks
	req.TimeoutMillis = int32(p.spec.TimeoutMs)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = p.spec.Topic
	var sent []*pBatch
	var parts []*pPart
	start := p.rnd.Intn(len(p.parts))
	lead := int32(-2) // clustered: the leader of the request's first partition
	for i := 0; i < len(p.parts) && len(sent) < p.spec.PartsPerReq; i++ {
		pp := p.parts[(start+i)%len(p.parts)]
		b := p.sendable(pp)
		if b == nil || !p.sameAs(&lead, pp.tp) {
			continue
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = pp.tp.Partition
		rp.Records = b.bytes
		rt.Partitions = append(rt.Partitions, rp)
		sent, parts = append(sent, b), append(parts, pp)
	}
	if len(sent) == 0 {
		return false
	}
	req.Topics = append(req.Topics, rt)
	ops := make([]int, len(sent))
	for i, b := range sent {
		ops[i] = p.attempt(parts[i], b)
	}
	if p.spec.Acks == 0 {
		p.send(req, p.spec.TimeoutMs, nil)
		for i, b := range sent {
			p.remove(parts[i], b) // nothing will ever tell: the outcome stays unknown
		}
		return true
	}
	p.send(req, p.spec.TimeoutMs+p.spec.TimeoutMs/2, func(r kmsg.Response, err error) {
		p.answered(parts, sent, ops, r, err)
	})
	return true
}

// attempt marks b in flight and records the attempt in the history.
func (p *producer) attempt(pp *pPart, b *pBatch) int {
	if !b.sent {
		b.sentDels = p.w.deleted[pp.tp.Topic]
	}
	b.inflight, b.sent = true, true
	pp.inflight++
	if p.spec.Idempotent && b.opID >= 0 {
		p.w.hist.Op(b.opID).Attempts++
		return b.opID
	}
	id := p.w.record(linearizability.Op{Kind: linearizability.OpAppend, Client: int(p.actor),
		TP: pp.tp, Call: p.w.now, Outcome: linearizability.Unknown, Write: b.write,
		Values: b.values, Keys: b.keys, Producer: int(p.actor), Session: p.session,
		Seq: b.writeNo, Built: b.built,
		Acks: p.spec.Acks, Idempotent: p.spec.Idempotent, Offset: -1, Attempts: 1})
	if p.spec.Idempotent {
		b.opID = id
	}
	return id
}

func (p *producer) remove(pp *pPart, b *pBatch) {
	for i, x := range pp.queue {
		if x == b {
			pp.queue = append(pp.queue[:i], pp.queue[i+1:]...)
			break
		}
	}
	if b.inflight {
		b.inflight = false
		pp.inflight--
	}
}

// answered handles a Produce response (or its absence) for the batches it carried.
func (p *producer) answered(parts []*pPart, sent []*pBatch, ops []int, r kmsg.Response,
	err error) {
	codes := make([]int16, len(sent))
	offsets := make([]int64, len(sent))
	for i := range sent {
		codes[i], offsets[i] = -1, -1 // -1: no answer for this partition
	}
	if err == nil {
		resp := r.(*kmsg.ProduceResponse)
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				for i, pp := range parts {
					if t.Topic == pp.tp.Topic && rp.Partition == pp.tp.Partition {
						codes[i], offsets[i] = rp.ErrorCode, rp.BaseOffset
					}
				}
			}
		}
	}
	retry := false
	for i, b := range sent {
		if p.outcome(parts[i], b, ops[i], codes[i], offsets[i]) {
			retry = true
		}
	}
	if retry {
		p.wakeIn(p.spec.BackoffMs * ms)
	} else {
		p.wakeIn(0)
	}
}

// outcome applies one partition's answer; it reports whether the batch must be retried.
func (p *producer) outcome(pp *pPart, b *pBatch, op int, code int16, offset int64) bool {
	if !b.inflight {
		// Abandoned meanwhile (producer session reset); an acknowledgement still counts.
		if code == 0 && p.w.hist.Op(op).Outcome == linearizability.Unknown {
			p.w.resolve(op, linearizability.OK, offset, 0)
		}
		return false
	}
	b.inflight = false
	pp.inflight--
	if code >= 0 {
		p.code("produce", code)
	}
	if p.w.logging() {
		p.w.logf(p.name, "%s write %s (op %d): code %d offset %d", pp.tp, b.write, op, code,
			offset)
	}
	switch {
	case code == 0:
		p.w.resolve(op, linearizability.OK, offset, 0)
		p.remove(pp, b)
		// Claimed only when no deletion was applied between the first send and the
		// answer: otherwise the write may have landed in the incarnation the deletion
		// removed, answered before the deletion applied and received after (seed 1055
		// failed producer-state-lost so, the new incarnation rightly not knowing it).
		if dels := p.w.deleted[pp.tp.Topic]; p.spec.Idempotent && !pp.acked &&
			b.sentDels == dels {
			pp.acked, pp.ackDels = true, dels
		}
		if pp.acked && b.sentDels == pp.ackDels {
			pp.ackBase = max(pp.ackBase, offset)
		}
		return false
	case code == kerr.DuplicateSequenceNumber.Code:
		p.seqRefused(op, code)
		p.w.resolve(op, linearizability.OK, -1, 0)
		p.remove(pp, b)
		return false
	case code == -1 || retriable(code) || p.gapBehind(pp, b, code):
		b.unknown = b.unknown || code == -1 || !p.definite(code)
		if !p.spec.Idempotent {
			p.settleAttempt(op, code)
		}
		return true
	default:
		p.fatal(pp, b, op, code)
		return false
	}
}

// gapBehind: an idempotent batch refused for a sequence gap while an earlier batch of
// its partition is still unacknowledged (that one failed and will be retried first).
func (p *producer) gapBehind(pp *pPart, b *pBatch, code int16) bool {
	return p.spec.Idempotent && code == kerr.OutOfOrderSequenceNumber.Code &&
		len(pp.queue) > 0 && pp.queue[0] != b
}

// seqRefused records a sequence error for the checker (linearizability/sequences.go),
// which decides whether the producer's own history disproves it.
func (p *producer) seqRefused(op int, code int16) {
	o := p.w.hist.Op(op)
	o.SeqErr, o.SeqErrAt, o.SeqErrSent = code, p.w.now, o.Attempts
	o.SeqErrEpoch = -1
	if p.w.clustered() {
		o.SeqErrEpoch = p.w.servedEpoch(o.TP)
	}
}

// settleAttempt records how a failed attempt of a non-idempotent batch ended.
func (p *producer) settleAttempt(op int, code int16) {
	if code != -1 && p.definite(code) {
		p.w.resolve(op, linearizability.Failed, -1, code)
		return
	}
	p.w.hist.Op(op).ErrCode = code // stays Unknown
}

// fatal handles a non-retriable error. Codes a well-behaved client should never see
// fail the run; sequence errors abandon the idempotent session (its in-flight batches
// stay unknown) and start a new one, as Kafka clients do.
func (p *producer) fatal(pp *pPart, b *pBatch, op int, code int16) {
	switch code {
	case kerr.OutOfOrderSequenceNumber.Code, kerr.UnknownProducerID.Code,
		kerr.InvalidProducerEpoch.Code:
		if p.spec.Idempotent {
			if code == kerr.OutOfOrderSequenceNumber.Code {
				p.seqRefused(op, code) // b is the oldest unacknowledged write (gapBehind)
			}
			if code == kerr.UnknownProducerID.Code {
				p.checkStateKept(pp)
			}
			p.resetSession()
			return
		}
	}
	p.w.fail("unexpected-error", "%s: produce to %s answered %s", p.name, pp.tp,
		errName(code))
	p.w.resolve(op, linearizability.Failed, -1, code)
	p.remove(pp, b)
}

// checkStateKept fails the run when a partition that acknowledged a write of the
// current session answers UNKNOWN_PRODUCER_ID: Kafka keeps a producer's state until
// producer.id.expiration.ms (a day) has passed, past retention and DeleteRecords too
// (KIP-360), and so must the broker across restarts (seed 3687). Exempt: the topic was
// deleted since (a re-created topic starts with no producers), log.flush.policy=never
// (a crash may lose acknowledged batches), rot (a rotten batch is cut from the log), and
// an answering replica that was emptied and restarted above every batch the session had
// acknowledged there (resetFrom).
func (p *producer) checkStateKept(pp *pPart) {
	if !pp.acked || p.w.deleted[pp.tp.Topic] != pp.ackDels ||
		p.w.cfg.Broker["log.flush.policy"] == "never" || p.w.cfg.Faults.Rot.On {
		return
	}
	if i := max(p.w.answering-1, 0); int(i) < len(p.w.nodes) &&
		p.w.nodes[i].resetFrom[pp.tp] > pp.ackBase {
		p.w.stats.Faults["producer-state-reset-replica"]++
		return
	}
	p.w.fail("anomaly", "producer-state-lost %s: %s producer id %d (session %d) had a "+
		"write acknowledged there, then got UNKNOWN_PRODUCER_ID", pp.tp, p.name, p.pid,
		p.session)
}

// resetSession abandons every queued batch (their ops stay unknown) and gets a new
// producer id; new batches start at sequence 0.
func (p *producer) resetSession() {
	if p.w.logging() {
		p.w.logf(p.name, "abandoning producer id %d epoch %d (session %d)", p.pid, p.epoch,
			p.session)
	}
	p.resets++
	p.w.stats.Faults["producer-session-reset"]++
	for _, pp := range p.parts {
		for _, b := range pp.queue {
			b.inflight = false
		}
		pp.queue, pp.inflight, pp.nextSeq, pp.acked, pp.ackBase = nil, 0, 0, false, 0
	}
	p.session++
	p.pid = -1
}

// retriable: Kafka's retriable produce errors, plus sequence gaps caused by an earlier
// batch that is being retried.
func retriable(code int16) bool {
	switch code {
	case kerr.RequestTimedOut.Code, kerr.KafkaStorageError.Code,
		kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code,
		kerr.LeaderNotAvailable.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.NetworkException.Code:
		return true
	}
	return false
}

// definite is definiteFailure for this producer's world: in a cluster a leader that
// appended a batch and lost its leadership while the batch waited for its followers
// answers NOT_LEADER_OR_FOLLOWER, as Kafka's does, and the batch may still commit
// under the next leader (a non-idempotent retry may then duplicate it, which Kafka
// allows).
func (p *producer) definite(code int16) bool {
	if code == kerr.NotLeaderForPartition.Code && p.rt != nil {
		return false
	}
	return definiteFailure(code)
}

// definiteFailure: the error guarantees nothing was written.
func definiteFailure(code int16) bool {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotLeaderForPartition.Code,
		kerr.LeaderNotAvailable.Code, kerr.NotEnoughReplicas.Code,
		kerr.CorruptMessage.Code, kerr.MessageTooLarge.Code, kerr.InvalidRecord.Code,
		kerr.InvalidRequiredAcks.Code, kerr.UnsupportedVersion.Code:
		return true
	}
	return false
}
