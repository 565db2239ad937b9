package sim

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/linearizability"
)

// client is one simulated client actor. Clients speak kmsg requests and responses, the
// types real clients use, over simulated connections.
type client interface {
	start()
	// heal: the faults have stopped; finish outstanding work, start no new work.
	heal()
	// busy describes outstanding work the client must still finish ("" when none).
	busy() string
	base() *clientBase
}

var (
	errTimeout  = errors.New("request timed out")
	errConnLost = errors.New("connection lost")
)

// clientBase is the plumbing every client shares: one connection at a time, request
// timeouts (which close the connection, as Kafka clients do), reconnect backoff, the
// API versions it speaks, and its own wake-ups.
type clientBase struct {
	w     *World
	actor int32
	name  string
	rnd   *Rand
	n     *node
	c     *conn
	vers  map[int16]int16

	calls        []*call
	nextCorr     uint64
	backoffUntil int64
	lastOK       int64 // time of the last response
	wakeAt       int64
	pump         func()
	rt           *router // clustered worlds: where each request goes (route.go)
	lastTerm     uint64  // the coordinator term of the answer being handed over
	// lost, when set, is told of each lost connection after its calls failed (a peer
	// link tells its node: peers.go).
	lost func(c *conn)
	// principal is who the client authenticates as ("": anonymous): the driver hands it
	// to the broker with each request, as the net layer does after SASL or TLS.
	principal string
}

// call is one request waiting for its response.
type call struct {
	corr     uint64
	c        *conn
	sent     int64
	key      int16 // API key (for the timeline)
	done     func(resp kmsg.Response, err error)
	finished bool
	// Clustered worlds: a group request's group, and the coordinator term of the node
	// when it answered (coord_term.go).
	group string
	term  uint64
}

func newClientBase(w *World, actor int32, name string, pump func()) clientBase {
	cb := clientBase{w: w, actor: actor, name: name, rnd: newStream(w.cfg.Seed, name),
		n: w.nodes[0], pump: pump}
	cb.vers = map[int16]int16{}
	if w.cfg.Nodes > 1 {
		cb.rt = newRouter()
	}
	for _, v := range broker.SupportedVersions {
		req := kmsg.RequestForKey(v.Key)
		if req == nil {
			continue
		}
		lo, hi := v.Min, min(v.Max, req.MaxVersion())
		if v.Key == int16(kmsg.Produce) {
			lo = broker.ProduceMinBatchVersion
		}
		if w.cfg.MaxVers {
			cb.vers[v.Key] = hi
		} else {
			cb.vers[v.Key] = int16(cb.rnd.Between(int64(lo), int64(hi)))
		}
	}
	return cb
}

func (cb *clientBase) base() *clientBase { return cb }

// send sends req with a client-side timeout. done (nil for acks=0 produces, which get
// no response) receives the response, or errTimeout/errConnLost: outcome unknown.
func (cb *clientBase) send(req kmsg.Request, timeoutMs int64, done func(kmsg.Response, error)) {
	req.SetVersion(cb.vers[req.Key()])
	switch {
	case cb.rt != nil:
		to := cb.target(req)
		cb.c = cb.connTo(to)
		if done != nil {
			done = cb.routed(req, to, done)
		}
	case cb.c == nil || !cb.c.clientOpen:
		cb.c = cb.w.dial(cb, cb.n)
	}
	cb.nextCorr++
	cl := &call{corr: cb.nextCorr, c: cb.c, sent: cb.w.now, key: req.Key(), done: done}
	if cb.rt != nil {
		cl.group, _ = groupOf(req)
	}
	if cb.w.logging() {
		cb.w.logf(cb.name, "send %s v%d corr %d on conn %d", kmsg.NameForKey(req.Key()),
			req.GetVersion(), cl.corr, cb.c.id)
	}
	if done != nil {
		cb.calls = append(cb.calls, cl)
		cb.w.after(timeoutMs*ms, KindClientWake, cb.actor, cl.corr, 1, func() {
			if !cl.finished {
				cb.finish(cl, nil, errTimeout)
				cb.dropConn(cl.c)
			}
		})
	}
	cb.w.sendRequest(cb.c, cl.corr, req)
}

// dropConn closes c from this end and fails every request still waiting on it.
func (cb *clientBase) dropConn(c *conn) {
	cb.w.closeFromClient(c)
	cb.connLost(c)
}

func (cb *clientBase) finish(cl *call, resp kmsg.Response, err error) {
	cl.finished = true
	for i, x := range cb.calls {
		if x == cl {
			cb.calls = append(cb.calls[:i], cb.calls[i+1:]...)
			break
		}
	}
	if err == nil {
		cb.lastOK = cb.w.now
	}
	cb.w.tlRequest(cb, cl, resp, err)
	cb.lastTerm = cl.term
	cl.done(resp, err)
}

// response delivers a response from the network.
func (cb *clientBase) response(c *conn, corr uint64, resp kmsg.Response) {
	for _, cl := range cb.calls {
		if cl.c == c && cl.corr == corr {
			cb.finish(cl, resp, nil)
			return
		}
	}
}

// connLost fails every request on c (their outcome is unknown) and backs off before the
// next connection.
func (cb *clientBase) connLost(c *conn) {
	if cb.w.logging() {
		cb.w.logf(cb.name, "connection %d lost", c.id)
	}
	if cb.rt != nil {
		cb.rt.lostConn(c, len(cb.w.nodes))
	}
	if cb.c == c {
		cb.c = nil
		cb.backoffUntil = cb.w.now + 20*ms + cb.rnd.Between(0, 100)*ms
	}
	var lost []*call
	for _, cl := range cb.calls {
		if cl.c == c {
			lost = append(lost, cl)
		}
	}
	for _, cl := range lost {
		if !cl.finished {
			cb.finish(cl, nil, errConnLost)
		}
	}
	if cb.lost != nil {
		cb.lost(c)
	}
	cb.wakeIn(cb.backoffUntil - cb.w.now)
}

// wakeIn runs the client's pump after d nanoseconds (coalescing wake-ups).
func (cb *clientBase) wakeIn(d int64) {
	t := cb.w.now + max(d, 0)
	if cb.wakeAt > cb.w.now && cb.wakeAt <= t {
		return
	}
	cb.wakeAt = t
	cb.w.at(t, KindClientWake, cb.actor, 0, 0, func() {
		if cb.wakeAt == t {
			cb.wakeAt = 0
		}
		cb.pump()
	})
}

// backingOff reports whether the client must wait before sending, arranging a wake-up.
func (cb *clientBase) backingOff() bool {
	if cb.w.now < cb.backoffUntil {
		cb.wakeIn(cb.backoffUntil - cb.w.now)
		return true
	}
	return false
}

// code counts an error code a client saw, for the summary.
func (cb *clientBase) code(api string, code int16) {
	if code != 0 {
		cb.w.stats.Codes[api+":"+errName(code)]++
	}
}

func errName(code int16) string {
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			return ke.Message
		}
		return e.Error()
	}
	return fmt.Sprintf("code%d", code)
}

// requestMetadata asks for the named topics; done gets partition counts (0: unknown).
func (cb *clientBase) requestMetadata(topics []string, timeoutMs int64,
	done func(counts map[string]int32, err error)) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	cb.send(req, timeoutMs, func(r kmsg.Response, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		resp := r.(*kmsg.MetadataResponse)
		counts := map[string]int32{}
		for _, t := range resp.Topics {
			if t.Topic == nil {
				continue
			}
			cb.code("metadata", t.ErrorCode)
			if t.ErrorCode != 0 {
				continue
			}
			for _, p := range t.Partitions {
				counts[*t.Topic] = max(counts[*t.Topic], p.Partition+1)
			}
			cb.w.meta.checkReported(cb.name, *t.Topic, t.TopicID, counts[*t.Topic])
		}
		done(counts, nil)
	})
}

// requestController asks for metadata to learn the controller. Metadata v0 has no
// controller id, so a client that speaks v0 asks this one at v1 or later, as a Kafka
// admin client must before a controller request. Without it an admin that drew v0
// never learned the controller and never created the run's topics (seed 2683: no
// topic, the group never settled).
func (cb *clientBase) requestController(timeoutMs int64, done func(err error)) {
	key := int16(kmsg.Metadata)
	old := cb.vers[key]
	cb.vers[key] = max(old, 1)
	cb.requestMetadata(nil, timeoutMs, func(_ map[string]int32, err error) { done(err) })
	cb.vers[key] = old
}

// maxHistoryOps bounds the history (and so the memory of a long --duration run).
const maxHistoryOps = 4_000_000

// record adds op to the history and folds its outcome into the trace.
func (w *World) record(op linearizability.Op) int {
	if len(w.hist.Ops) == maxHistoryOps {
		w.fail("world", "history exceeded %d operations: use a shorter --duration",
			maxHistoryOps)
		w.stopped = true
	}
	if op.Kind == linearizability.OpRead && w.clustered() {
		op.ServedEpoch = w.servedEpoch(op.TP)
		w.checkReadCommitted(&op)
	}
	id := w.hist.Add(op)
	w.tr.note("op", int64(op.Kind), int64(op.Client), op.Call, int64(op.TP.Partition))
	return id
}

// servedEpoch is the leader epoch of tp's replica on the node whose answer a client is
// handling, -1 when not known (no answer, the node went down). Clustered worlds note it
// on reads and acknowledged appends: Kafka promises a high-water mark at least an
// acknowledged write's end only within one leadership (linearizability's stale-read).
func (w *World) servedEpoch(tp core.TopicPartition) int32 {
	if e, ok := w.replied[tp]; ok {
		return e // noted as the node answered (replyEpochs)
	}
	if w.answering <= 0 || int(w.answering) > len(w.nodes) {
		return -1
	}
	n := w.nodes[w.answering-1]
	if !n.up || n.b == nil {
		return -1
	}
	rep := n.b.HostedReplica(tp)
	if rep == nil {
		return -1
	}
	return rep.LeaderEpoch()
}

// recordGroup adds what a group member was answered to the group history and folds it
// into the trace.
func (w *World) recordGroup(e linearizability.GroupEvent) {
	if len(w.hist.Groups) == maxHistoryOps {
		w.fail("world", "group history exceeded %d events: use a shorter --duration",
			maxHistoryOps)
		w.stopped = true
	}
	w.hist.Groups = append(w.hist.Groups, e)
	w.tr.note("group", int64(e.Kind), int64(e.Client), int64(e.Generation), int64(e.Code))
}

// resolve updates an op's outcome and folds it into the trace.
func (w *World) resolve(id int, out linearizability.Outcome, offset int64, code int16) {
	op := w.hist.Op(id)
	op.Outcome, op.Return, op.Offset, op.ErrCode = out, w.now, offset, code
	if op.Kind == linearizability.OpAppend && out == linearizability.OK && w.clustered() {
		op.ServedEpoch = w.servedEpoch(op.TP)
	}
	w.tr.note("resolve", int64(id), int64(out), offset, int64(code))
}

// topicMeta is a client's schedule for refreshing its topic's partition count.
type topicMeta struct {
	busy bool  // a Metadata request is in flight
	next int64 // virtual time of the next refresh
}

// refreshPartitions asks for topic's partition count and hands it to grow; it refreshes
// again after two seconds, or after backoffMs when the topic is not there yet.
func (cb *clientBase) refreshPartitions(m *topicMeta, topic string, timeoutMs,
	backoffMs int64, grow func(n int32)) {
	m.busy = true
	cb.requestMetadata([]string{topic}, timeoutMs, func(c map[string]int32, err error) {
		m.busy = false
		m.next = cb.w.now + 2000*ms
		if err != nil || c[topic] == 0 {
			m.next = cb.w.now + backoffMs*ms
			cb.wakeIn(backoffMs * ms)
			return
		}
		grow(c[topic])
		cb.wakeIn(0)
	})
}
