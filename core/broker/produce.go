package broker

// Produce (API key 0), versions 0–11 advertised, 3–11 served.
//
// Behaviour:
//   - v0–v2 carry the old message format: every partition gets UNSUPPORTED_VERSION. The
//     range starts at 0 only so that older librdkafka keeps compression on
//     (kafka-compat.md).
//   - Each partition's record set must be exactly one v2 batch. It is validated as
//     Kafka's log validator does (batch.Validate): header, length, CRC-32C, then every
//     record decoded in place (a compressed batch inflated first, at most
//     batch.MaxDecompressedBytes): framing, offset deltas 0..lastOffsetDelta, no bytes
//     left over, and timestamps within message.timestamp.before.max.ms /
//     message.timestamp.after.max.ms of the broker's clock. A batch whose length or CRC
//     is wrong gets CORRUPT_MESSAGE; one whose records are wrong INVALID_RECORD; a
//     timestamp out of range INVALID_TIMESTAMP. From v8 the response names the records
//     at fault (ErrorRecords) and says why (ErrorMessage). Nothing of a refused batch is
//     stored. An accepted batch is stored as sent, with the broker's offset, leader
//     epoch and (CreateTime) the records' max timestamp written into its header.
//   - acks=0: no response is sent at all. acks=1: answered once written. acks=all
//     (-1): answered once the high-water mark passes the batch, which with
//     log.flush.policy=always means once it is fsynced (group commit).
//   - Idempotent producers: a retry of one of the last five batches gets its original
//     offset; a gap gets OUT_OF_ORDER_SEQUENCE_NUMBER; an old epoch
//     INVALID_PRODUCER_EPOCH. Transactional batches are refused (INVALID_RECORD) until
//     transactions exist.
//   - acks=all is refused with NOT_ENOUGH_REPLICAS, before anything is written, when
//     the in-sync replicas (one, on a single node; the committed ISR of an assigned
//     partition) are fewer than min.insync.replicas. On an assigned partition acks=all
//     waits until every ISR member holds the batch (the high-water mark, isr_changes.go)
//     and is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
//     min.insync.replicas meanwhile; a leader that resigns answers its waiting produces
//     NOT_LEADER_OR_FOLLOWER. Only the partition's leader takes produces (leader.go).
//   - acks=all waits at most the request's timeout, then REQUEST_TIMED_OUT for the
//     partitions still waiting (their batches stay in the log; an idempotent retry gets
//     the original offset).

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/replica"
)

// pendingProduce is an acks=all request waiting for high-water marks to move.
type pendingProduce struct {
	req     Request
	resp    *kmsg.ProduceResponse
	waiting int // partitions still waiting
	timer   uint64
	done    bool
	mute    int32 // the producer_byte_rate throttle its reply mutes the connection for
}

// produceWait is one partition of a pending produce.
type produceWait struct {
	p      *pendingProduce
	tp     core.TopicPartition
	part   *kmsg.ProduceResponseTopicPartition
	offset int64 // answered once the high-water mark reaches it
}

type produceState struct {
	byTP  map[core.TopicPartition][]produceWait
	count int // pending requests
	// dirty lists partitions appended to during this step, for requestSyncs.
	dirty []core.TopicPartition
}

func (rm *replicaManager) handleProduce(r Request, m *kmsg.ProduceRequest) {
	resp := m.ResponseKind().(*kmsg.ProduceResponse)
	code := int16(0)
	switch {
	case m.Version < ProduceMinBatchVersion:
		code = kerr.UnsupportedVersion.Code
	case m.Acks != 0 && m.Acks != 1 && m.Acks != -1:
		code = kerr.InvalidRequiredAcks.Code
	case m.TransactionID != nil:
		code = kerr.TransactionalIDAuthorizationFailed.Code
	case m.Acks == -1 && rm.produces.count >= rm.cfg.MaxWaitingProduces:
		code = kerr.RequestTimedOut.Code // shed load before writing anything
		rm.hit(pProduceShed)
	}
	p := &pendingProduce{req: r, resp: resp, mute: rm.meterProduce(r, m)}
	resp.ThrottleMillis = p.mute
	var waits []produceWait
	for _, t := range m.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, part := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = part.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	for ti, t := range m.Topics {
		for pi, part := range t.Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			if code != 0 {
				rp.ErrorCode = code
				continue
			}
			tp := core.TopicPartition{Topic: t.Topic, Partition: part.Partition}
			if w, ok := rm.producePartition(tp, part.Records, rp, m.Acks); ok {
				w.p = p
				waits = append(waits, w)
			}
		}
	}
	rm.requestSyncs()
	switch {
	case m.Acks == 0:
		rm.hit(pProduceAcks0)
		rm.replyMuted(r, nil, p.mute)
	case len(waits) == 0:
		rm.replyMuted(r, resp, p.mute)
	default:
		rm.hit(pProduceParked)
		rm.parkProduce(p, waits, m.TimeoutMillis)
	}
}

// producePartition appends one partition's batch and fills its response. It returns
// a wait when the answer must wait for the high-water mark (acks=all).
func (rm *replicaManager) producePartition(tp core.TopicPartition, records []byte,
	rp *kmsg.ProduceResponseTopicPartition, acks int16) (produceWait, bool) {
	rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
	rep, code := rm.replicaFor(tp)
	if code == 0 {
		code = rm.checkLeader(tp, -1)
	}
	if s, assigned := rm.assignedState(tp); code == 0 && assigned {
		core.Invariant(s.Leader == rm.cfg.NodeID, "B12", "%s: produce accepted on node %d, the leader is %d", tp, rm.cfg.NodeID,
			s.Leader)
	}
	if code == 0 && isInternalTopic(tp.Topic) {
		code = kerr.InvalidTopicException.Code // only the broker writes internal topics
	}
	if code != 0 {
		rp.ErrorCode = code
		return produceWait{}, false
	}
	if acks == -1 && !rm.enoughInSync(tp, rep) {
		// Checked before appending, as Kafka does: nothing is written that could not be
		// acknowledged.
		rp.ErrorCode = kerr.NotEnoughReplicas.Code
		rp.LogStartOffset = rep.StartOffset()
		return produceWait{}, false
	}
	res := rep.Append(rm.now.Millis(), records)
	if !res.Duplicate && res.Err == 0 {
		rm.produces.dirty = append(rm.produces.dirty, tp)
	}
	rp.LogStartOffset = rep.StartOffset()
	if res.Err != 0 && rep.Offline() {
		// The write took the log offline: nothing waiting on it will ever be durable.
		rm.partitionFailed(tp, kerr.KafkaStorageError.Code)
	}
	if res.Err != 0 {
		rp.ErrorCode = res.Err
		if res.Message != "" {
			msg := res.Message
			rp.ErrorMessage = &msg
		}
		for _, re := range res.RecordErrors {
			er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
			msg := re.Message
			er.RelativeOffset, er.ErrorMessage = re.Index, &msg
			rp.ErrorRecords = append(rp.ErrorRecords, er)
		}
		return produceWait{}, false
	}
	rp.BaseOffset, rp.LogAppendTime = res.BaseOffset, res.LogAppendTimeMs
	if acks == -1 && rep.HighWatermark() < res.WaitOffset && !mutantOn("ack-before-fsync") {
		return produceWait{tp: tp, part: rp, offset: res.WaitOffset}, true
	}
	return produceWait{}, false
}

// replicaFor returns the hosted replica of tp, or the error code a client should get.
func (rm *replicaManager) replicaFor(tp core.TopicPartition) (*replica.Replica, int16) {
	if rep := rm.replicas[tp]; rep != nil {
		return rep, 0
	}
	if rm.opening(tp) {
		return nil, kerr.LeaderNotAvailable.Code // its log opens in a later step
	}
	if code, ok := rm.notHostedCode(tp); ok {
		return nil, code // another node's partition (placement.go)
	}
	if t := rm.image.Topic(tp.Topic); t != nil && tp.Partition >= 0 && tp.Partition < t.Partitions {
		rm.hit(pProduceLogNotOpen)
		return nil, kerr.KafkaStorageError.Code // the topic has it; its log did not open
	}
	return nil, kerr.UnknownTopicOrPartition.Code
}

func (rm *replicaManager) parkProduce(p *pendingProduce, waits []produceWait, timeoutMs int32) {
	if rm.produces.byTP == nil {
		rm.produces.byTP = map[core.TopicPartition][]produceWait{}
	}
	for _, w := range waits {
		rm.produces.byTP[w.tp] = append(rm.produces.byTP[w.tp], w)
	}
	p.waiting = len(waits)
	rm.produces.count++
	if timeoutMs < 0 {
		timeoutMs = 0
	}
	p.timer = rm.setTimer(rm.now.AddMillis(int64(timeoutMs)),
		brokerTimer{kind: timerProduceTimeout, produce: p})
}

// durable tells the group coordinator how far tp is durable (msgDurable), unless tp is
// gone.
func (rm *replicaManager) durable(tp core.TopicPartition, rep *replica.Replica) {
	if rep == nil {
		return
	}
	hwm := rep.HighWatermark()
	if mutantOn("commit-before-durable") {
		hwm = rep.EndOffset()
	}
	if mutantOn("offset-commit-before-isr") {
		hwm = max(hwm, rep.DurableEnd())
	}
	rm.post(msgDurable{tp: tp, hwm: hwm, short: !rm.enoughAfterAppend(tp)})
}

// appendInternal appends a batch of the broker's own (an offset write) to tp and
// answers msgAppended; once appended, the sync it needs is started and the coordinator
// told how far tp is durable.
func (rm *replicaManager) appendInternal(m msgAppendInternal) {
	tp := m.tp
	rep, code := rm.replicaFor(tp)
	if code == 0 {
		code = rm.checkLeader(tp, -1)
	}
	if code == 0 && m.overloaded {
		code = kerr.RequestTimedOut.Code
	}
	if code == 0 && !rm.enoughInSync(tp, rep) {
		// acks=all semantics for the offsets topic too: nothing is appended that could
		// not be acknowledged (the coordinator answers COORDINATOR_NOT_AVAILABLE).
		code = kerr.NotEnoughReplicas.Code
	}
	if code != 0 {
		rm.post(msgAppended{write: m.write, code: code})
		return
	}
	res := rep.Append(rm.now.Millis(), m.batch)
	if res.Err != 0 && rep.Offline() {
		// As a produce does: the write took the log offline, so the writes waiting for
		// a sync will never be durable (the log dropped them); answer them now.
		rm.partitionFailed(tp, kerr.KafkaStorageError.Code)
	}
	if res.Err != 0 {
		rm.post(msgAppended{write: m.write, code: res.Err})
		return
	}
	rm.post(msgAppended{write: m.write, tp: tp, offset: res.WaitOffset})
	rm.produces.dirty = append(rm.produces.dirty, tp)
	rm.requestSyncs()
	rm.durable(tp, rm.replicas[tp])
}

// hwmAdvanced answers the produce waits on tp that the new high-water mark covers.
func (rm *replicaManager) hwmAdvanced(tp core.TopicPartition) {
	rep := rm.replicas[tp]
	if rep != nil && rm.held != nil {
		rm.checkHeld(tp, rep)
	}
	waits := rm.produces.byTP[tp]
	if rep != nil && len(waits) > 0 {
		kept := waits[:0]
		for _, w := range waits {
			if w.p.done {
				continue
			}
			if rep.HighWatermark() >= w.offset {
				if !rm.enoughAfterAppend(tp) {
					// Kafka's answer when the ISR shrank below min.insync.replicas while
					// the batch waited: it is in the log, but fewer replicas hold it.
					rm.hit(pAfterAppend)
					w.part.ErrorCode = kerr.NotEnoughReplicasAfterAppend.Code
				}
				rm.produceWaitDone(w)
				continue
			}
			kept = append(kept, w)
		}
		rm.storeWaits(tp, kept)
	}
	rm.durable(tp, rm.replicas[tp])
	rm.fetchDataArrived(tp)
}

func (rm *replicaManager) storeWaits(tp core.TopicPartition, kept []produceWait) {
	if len(kept) == 0 {
		delete(rm.produces.byTP, tp)
		return
	}
	rm.produces.byTP[tp] = kept
}

func (rm *replicaManager) produceWaitDone(w produceWait) {
	w.p.waiting--
	if w.p.waiting == 0 {
		rm.finishProduce(w.p)
	}
}

func (rm *replicaManager) finishProduce(p *pendingProduce) {
	p.done = true
	rm.produces.count--
	rm.cancelTimer(p.timer)
	rm.replyMuted(p.req, p.resp, p.mute)
}

// meterProduce meters a produce's batch bytes against its producer_byte_rate quota, if
// one applies, and returns the throttle (quotas.go). Kafka meters the request's size;
// the batches are nearly all of it.
func (rm *replicaManager) meterProduce(r Request, m *kmsg.ProduceRequest) int32 {
	if !rm.image.HasQuotas() {
		return 0
	}
	bytes := 0
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			bytes += len(p.Records)
		}
	}
	return rm.meterQuota(r, quotaProduce, bytes)
}

// produceTimedOut answers a produce whose acks=all wait ran out: partitions still
// waiting get REQUEST_TIMED_OUT. Their batches stay in the log.
func (rm *replicaManager) produceTimedOut(p *pendingProduce) {
	if p.done {
		return
	}
	rm.hit(pProduceTimedOut)
	rm.failProduceWaits(p, kerr.RequestTimedOut.Code)
	rm.finishProduce(p)
}

// failProduceWaits marks every still-waiting partition of p with code and drops the
// waits from the index.
func (rm *replicaManager) failProduceWaits(p *pendingProduce, code int16) {
	for tp, waits := range rm.produces.byTP {
		kept := waits[:0]
		for _, w := range waits {
			if w.p == p {
				w.part.ErrorCode = code
				continue
			}
			kept = append(kept, w)
		}
		rm.storeWaits(tp, kept)
	}
}

// requestSyncs starts a sync on every replica appended to in this step that has
// unsynced data and no sync in flight, in partition order. Under
// log.flush.policy=never nothing needs a sync but the high-water mark moved.
func (rm *replicaManager) requestSyncs() {
	// Take the list: hwmAdvanced below may run handlers that append to a fresh one.
	dirty := rm.produces.dirty
	rm.produces.dirty = nil
	defer func() {
		if rm.produces.dirty == nil {
			rm.produces.dirty = dirty[:0] // reuse the array
		}
	}()
	sort.Slice(dirty, func(i, j int) bool { return dirty[i].Less(dirty[j]) })
	for i, tp := range dirty {
		if i > 0 && dirty[i-1] == tp {
			continue
		}
		rep := rm.replicas[tp]
		if rep == nil {
			continue
		}
		if rep.NeedsSync() {
			rm.beginSync(tp, rep)
		}
		if !rep.FlushAlways() {
			rm.hwmAdvanced(tp)
		}
		rm.followerDataArrived(tp)
		rep.ForgetFresh() // the followers waiting for it were answered (replica/fresh.go)
	}
}

func (rm *replicaManager) syncDone(in SyncDone) {
	if s, ok := rm.syncs[in.TP]; ok && s.token == in.Token {
		delete(rm.syncs, in.TP)
	}
	rep := rm.replicas[in.TP]
	if rep == nil || rep.Incarnation() != in.Incarnation {
		rm.hit(pSyncStale)
		return // the partition was deleted (and maybe recreated) meanwhile
	}
	defer rm.followerSynced(in.TP) // a follower may fetch again (fetcher.go, F2)
	moved := rep.SyncCompleted(in.Err)
	if in.Err != nil || rep.Offline() {
		// Offline: a write failed while the sync ran and the log may have dropped what
		// it covered; nothing waiting on tp will be durable in this incarnation.
		rm.partitionFailed(in.TP, kerr.KafkaStorageError.Code)
		return
	}
	switch {
	case moved:
		rm.hwmAdvanced(in.TP)
	case isInternalTopic(in.TP.Topic):
		rm.durable(in.TP, rep) // the coordinator hears of every fsync of its partitions
	}
	if rep.NeedsSync() {
		rm.beginSync(in.TP, rep)
	}
}

// pendingSync is the one sync in flight on a partition (R3), kept for Pending.
type pendingSync struct {
	token uint64
	since core.Time
}

// beginSync starts a sync of tp's log.
func (rm *replicaManager) beginSync(tp core.TopicPartition, rep *replica.Replica) {
	rep.BeginSync()
	tok := rm.token()
	if rm.syncs == nil {
		rm.syncs = map[core.TopicPartition]pendingSync{}
	}
	rm.syncs[tp] = pendingSync{token: tok, since: rm.now}
	rm.env.SyncLog(tp, rep.Incarnation(), tok, rep.Log())
}

// partitionFailed answers every produce waiting on tp with code.
func (rm *replicaManager) partitionFailed(tp core.TopicPartition, code int16) {
	waits := rm.produces.byTP[tp]
	delete(rm.produces.byTP, tp)
	for _, w := range waits {
		if w.p.done {
			continue
		}
		rm.hit(pProduceFailedWaiting)
		w.part.ErrorCode = code
		rm.produceWaitDone(w)
	}
	rm.post(msgPartitionFailed{tp, code})
	rm.fetchDataArrived(tp)
	rm.maybeResign(tp)
}
