package broker

// Fetch (API key 1), versions 4–12.
//
// Behaviour:
//   - Reads up to the high-water mark; the last stable offset equals it and no aborted
//     transactions are reported (there are none yet), which read_committed clients
//     such as librdkafka need to see.
//   - Returns the whole batch containing the fetch offset; the client skips records
//     before its offset. At most PartitionMaxBytes per partition and MaxBytes in all,
//     except that the first non-empty partition always gets its first batch (KIP-74).
//   - The broker caps MaxBytes (KIP-541): a consumer's response holds at most
//     fetch.max.bytes (55 MiB) of records, a follower's (ReplicaID >= 0)
//     replica.fetch.response.max.bytes (10 MiB); MaxBytes <= 0 means the cap. No
//     partition reads more than what is left of that. Only the KIP-74 first batch may
//     go past it, and that batch is no larger than max.message.bytes allowed when it
//     was written, so one response holds at most the cap plus one batch (limits.go,
//     docs/limits.md).
//   - Offsets below the log start or above the log end get OFFSET_OUT_OF_RANGE; offsets
//     in [high-water mark, log end] read as empty.
//   - Long poll: when fewer than MinBytes are available the request waits up to
//     MaxWaitMillis for more, and is answered as soon as enough arrives.
//   - Fetch sessions (KIP-227): fetch_session.go. A full fetch (SessionEpoch 0 or -1) is
//     served whatever SessionID it names, as Kafka serves it; epoch 0 asks for a session.
//   - CurrentLeaderEpoch (v9+) is checked as in OffsetForLeaderEpoch: newer than the
//     leader's gets UNKNOWN_LEADER_EPOCH, older FENCED_LEADER_EPOCH, -1 skips the check.
//   - A partition of an assigned topic is served by its leader only: elsewhere
//     NOT_LEADER_OR_FOLLOWER (leader.go); a parked fetch on a partition that stops
//     leading here is answered at once. A follower's fetch (ReplicaID >= 0) of assigned
//     partitions is the leader's side of replication (follower_fetch.go).

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

// fetchWait is a fetch request parked until data arrives or its wait runs out.
type fetchWait struct {
	req        Request
	m          *kmsg.FetchRequest
	tps        []core.TopicPartition
	startBytes []int64 // replica BytesVisible per tps entry when parked
	follower   bool    // a follower's fetch: woken by appends (follower_fetch.go)
	startEnd   []int64 // follower: replica EndOffset per tps entry when parked
	have       int     // bytes available when parked
	timer      uint64
	done       bool
	session    *fetchSession // nil: sessionless
	// incremental: the response lists only partitions with news (fetch_session.go)
	incremental bool
}

type fetchState struct {
	byTP     map[core.TopicPartition][]*fetchWait
	byConn   map[uint64][]*fetchWait
	count    int
	draining bool // shutting down: no fetch waits any more
}

func (rm *replicaManager) handleFetch(r Request, req *kmsg.FetchRequest) {
	m, sess, code := rm.resolveFetch(req)
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		rm.reply(r, resp)
		return
	}
	m = rm.authorizeFetch(r, m) // topics it may not READ are answered apart (authorize.go)
	incremental := req.SessionEpoch > 0
	follower := rm.isFollowerFetch(m)
	resp, n, anyErr := rm.readFetch(m, true, rm.fetchQuotaCap(r, follower))
	if m.MaxWaitMillis <= 0 || n >= int(max(m.MinBytes, 1)) || anyErr ||
		rm.fetches.count >= rm.cfg.MaxWaitingFetches || rm.fetches.draining {
		rm.replyFetch(r, resp, sess, incremental, follower)
		return
	}
	rm.hit(pFetchParked)
	w := rm.parkFetch(r, m, n)
	w.session, w.incremental = sess, incremental
}

// replyFetch answers a fetch, through its session if it has one. A consumer's fetch
// is metered against its consumer_byte_rate quota, if one applies (quotas.go).
func (rm *replicaManager) replyFetch(r Request, resp *kmsg.FetchResponse,
	sess *fetchSession, incremental, follower bool) {
	if sess != nil {
		rm.sessionResponse(sess, incremental, resp)
	}
	if follower {
		rm.reply(r, resp)
		return
	}
	bytes := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			bytes += len(p.RecordBatches)
		}
	}
	throttle := rm.meterQuota(r, quotaFetch, bytes)
	resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
	rm.replyMuted(r, resp, throttle)
}

// fetchQuotaCap is the consumer_byte_rate cap on a consumer fetch's response (-1: none).
func (rm *replicaManager) fetchQuotaCap(r Request, follower bool) int {
	if follower {
		return -1
	}
	return rm.quotaFetchCap(r)
}

// readFetch builds the response from what is readable now and returns it with the
// number of record bytes in it and whether any partition had an error. first is false
// for the re-read of a parked fetch (a follower's fetch is recorded once). qcap >= 0
// caps the response's record bytes further (a consumer_byte_rate quota).
func (rm *replicaManager) readFetch(m *kmsg.FetchRequest, first bool,
	qcap int) (*kmsg.FetchResponse, int, bool) {
	resp := m.ResponseKind().(*kmsg.FetchResponse)
	budget := rm.fetchBudget(m)
	if qcap >= 0 {
		budget = min(budget, qcap)
	}
	follower := rm.isFollowerFetch(m)
	total, anyErr := 0, false
	for _, t := range m.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			var rp kmsg.FetchResponseTopicPartition
			if follower {
				rp = rm.readFollowerPartition(m, t.Topic, &p, budget-total, total > 0, first)
			} else {
				rp = rm.readFetchPartition(t.Topic, &p, budget-total, total > 0)
			}
			total += len(rp.RecordBatches)
			anyErr = anyErr || rp.ErrorCode != 0
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, total, anyErr
}

// fetchBudget is the most record bytes the response to m may carry: the request's
// MaxBytes capped by fetch.max.bytes, or replica.fetch.response.max.bytes for a follower.
func (rm *replicaManager) fetchBudget(m *kmsg.FetchRequest) int {
	limit := rm.cfg.Limits.FetchMaxBytes
	if m.ReplicaID >= 0 {
		limit = rm.cfg.Limits.ReplicaFetchResponseMaxBytes
	}
	if m.MaxBytes > 0 && int(m.MaxBytes) < limit {
		return int(m.MaxBytes)
	}
	return limit
}

func (rm *replicaManager) readFetchPartition(topic string, p *kmsg.FetchRequestTopicPartition,
	budget int, strict bool) kmsg.FetchResponseTopicPartition {
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.Partition = p.Partition
	// Never null: librdkafka rejects a null record set (Fetch v4–v11) as a parse error.
	rp.RecordBatches = []byte{}
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
	tp := core.TopicPartition{Topic: topic, Partition: p.Partition}
	rep, code := rm.replicaFor(tp)
	if code == 0 {
		code = rm.checkLeader(tp, p.CurrentLeaderEpoch)
	}
	if code != 0 {
		rp.ErrorCode = code
		return rp
	}
	// Never more than the response has left, however large PartitionMaxBytes is. The
	// first non-empty partition gets its first batch even at a limit of 0 (KIP-74).
	limit := max(min(int(p.PartitionMaxBytes), budget), 0)
	if !strict {
		limit = max(limit, 1)
	}
	res := rep.Read(p.FetchOffset, limit)
	rp.ErrorCode = res.Err
	rp.HighWatermark, rp.LastStableOffset = res.HighWatermark, res.HighWatermark
	rp.LogStartOffset = res.StartOffset
	// Only the first non-empty partition may exceed the limit (KIP-74).
	kip74 := !strict && !mutantOn("kip74-first-dropped")
	if res.Records != nil && (kip74 || len(res.Records) <= limit) {
		rp.RecordBatches = res.Records
	} else if res.Records != nil {
		rm.hit(pFetchOverLimit)
	}
	return rp
}

func (rm *replicaManager) parkFetch(r Request, m *kmsg.FetchRequest, have int) *fetchWait {
	w := &fetchWait{req: r, m: m, have: have, follower: rm.isFollowerFetch(m)}
	if w.follower {
		rm.hit(pFollowerParked)
	}
	if rm.fetches.byTP == nil {
		rm.fetches.byTP = map[core.TopicPartition][]*fetchWait{}
		rm.fetches.byConn = map[uint64][]*fetchWait{}
	}
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			tp := core.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			var start, end int64
			if rep := rm.replicas[tp]; rep != nil {
				start, end = rep.BytesVisible(), rep.EndOffset()
			}
			w.tps = append(w.tps, tp)
			w.startBytes = append(w.startBytes, start)
			if w.follower {
				w.startEnd = append(w.startEnd, end)
			}
			rm.fetches.byTP[tp] = append(rm.fetches.byTP[tp], w)
		}
	}
	rm.fetches.byConn[r.Conn] = append(rm.fetches.byConn[r.Conn], w)
	rm.fetches.count++
	w.timer = rm.setTimer(rm.now.AddMillis(int64(m.MaxWaitMillis)),
		brokerTimer{kind: timerFetchWait, fetch: w})
	return w
}

// fetchWaitEnded answers a parked fetch whose MaxWaitMillis ran out.
func (rm *replicaManager) fetchWaitEnded(w *fetchWait) {
	if !w.done {
		rm.hit(pFetchExpired)
	}
	rm.answerFetch(w)
}

// fetchDataArrived wakes the fetches parked on tp that now have enough bytes.
func (rm *replicaManager) fetchDataArrived(tp core.TopicPartition) {
	waits := rm.fetches.byTP[tp]
	if len(waits) == 0 {
		return
	}
	// Copy: answering removes entries from the index being walked.
	for _, w := range append([]*fetchWait(nil), waits...) {
		if !w.done && rm.fetchHasEnough(w) {
			rm.hit(pFetchWoken)
			rm.answerFetch(w)
		}
	}
}

func (rm *replicaManager) fetchHasEnough(w *fetchWait) bool {
	if w.follower {
		return rm.followerHasEnough(w)
	}
	got := int64(w.have)
	for i, tp := range w.tps {
		rep := rm.replicas[tp]
		if rep == nil {
			rm.hit(pFetchPartitionGone)
			return true // the partition went away: answer with its error now
		}
		if rep.Follower() {
			return true // it stopped leading here: NOT_LEADER_OR_FOLLOWER now
		}
		got += rep.BytesVisible() - w.startBytes[i]
	}
	return got >= int64(max(w.m.MinBytes, 1))
}

// answerFetch re-reads every partition of a parked fetch and replies.
func (rm *replicaManager) answerFetch(w *fetchWait) {
	if w.done {
		return
	}
	rm.dropFetch(w)
	resp, _, _ := rm.readFetch(w.m, false, rm.fetchQuotaCap(w.req, w.follower))
	rm.replyFetch(w.req, resp, w.session, w.incremental, w.follower)
}

// dropFetch removes a parked fetch from every index without answering it.
func (rm *replicaManager) dropFetch(w *fetchWait) {
	w.done = true
	rm.fetches.count--
	rm.cancelTimer(w.timer)
	for _, tp := range w.tps {
		rm.fetches.byTP[tp] = removeWait(rm.fetches.byTP[tp], w)
		if len(rm.fetches.byTP[tp]) == 0 {
			delete(rm.fetches.byTP, tp)
		}
	}
	c := w.req.Conn
	rm.fetches.byConn[c] = removeWait(rm.fetches.byConn[c], w)
	if len(rm.fetches.byConn[c]) == 0 {
		delete(rm.fetches.byConn, c)
	}
}

func removeWait(ws []*fetchWait, w *fetchWait) []*fetchWait {
	for i, x := range ws {
		if x == w {
			return append(ws[:i], ws[i+1:]...)
		}
	}
	return ws
}

// connClosed drops the parked fetches and produces of a connection that went away:
// nobody is left to read their answers.
func (rm *replicaManager) connClosed(conn uint64) {
	rm.authzConnClosed(conn)
	rm.dropHeld(conn)
	for _, w := range append([]*fetchWait(nil), rm.fetches.byConn[conn]...) {
		rm.hit(pFetchConnClosed)
		rm.dropFetch(w)
	}
}

// partitionGone answers every waiter on a partition that was just removed.
func (rm *replicaManager) partitionGone(tp core.TopicPartition) {
	rm.partitionFailed(tp, kerr.UnknownTopicOrPartition.Code)
}

// drain answers every parked fetch now and stops new ones from waiting (shutdown).
func (rm *replicaManager) drain() {
	rm.fetches.draining = true
	rm.drainHeld()
	var all []*fetchWait
	for _, conn := range sortedConns(rm.fetches.byConn) {
		all = append(all, rm.fetches.byConn[conn]...)
	}
	for _, w := range all {
		rm.hit(pFetchDrained)
		rm.answerFetch(w)
	}
}

func sortedConns(m map[uint64][]*fetchWait) []uint64 {
	out := make([]uint64, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
