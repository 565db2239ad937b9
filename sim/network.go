package sim

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
)

const (
	toNode   = 0
	toClient = 1
)

// conn is one client connection to a node. Each direction is a FIFO stream (as over
// TCP): a message never overtakes one sent before it on the same connection.
type conn struct {
	id   uint64
	cl   *clientBase
	n    *node
	gen  uint64 // the node incarnation that accepted it (0: none yet)
	last [2]int64

	clientOpen bool // the client still reads from it
	nodeOpen   bool // the node still answers on it
	reset      bool // messages in flight are lost

	// Node side: request ids in arrival order, and replies the broker gave early. The
	// driver, not the broker, keeps replies in request order (contract rule E1).
	order []uint64
	ready map[uint64]broker.Reply
	corr  map[uint64]uint64 // request id → client correlation id
	// epochs: per early reply, the leader epochs of its partitions' replicas when the
	// node answered (replyEpochs).
	epochs map[uint64]map[core.TopicPartition]int32
	// mutedUntil: requests arriving before it wait until then (rule E8).
	mutedUntil int64
	held       []heldRequest // requests held by a mute, in arrival order
	releasing  bool          // a release of held is scheduled
}

// dial opens a new connection from cl to n.
func (w *World) dial(cl *clientBase, n *node) *conn {
	w.nextConn++
	c := &conn{id: w.nextConn, cl: cl, n: n, clientOpen: true, nodeOpen: true,
		ready: map[uint64]broker.Reply{}, corr: map[uint64]uint64{}}
	w.conns[c.id] = c
	return c
}

// pathTime is when a message sent now in direction dir on c arrives: after the path's
// latency (longer while the node's links are clogged), after any partition on the path
// heals, and never before the previous message in that direction.
func (w *World) pathTime(c *conn, dir int) int64 {
	t := w.cfg.Timing
	lat := w.netR.Exp(t.NetFloorUs*us, t.NetMeanUs*us)
	if w.now < c.n.clogUntil {
		lat *= w.cfg.Faults.ClogFactor
	}
	base := w.now
	if b := w.blocked[c.cl.actor]; b != nil && b[dir] > base {
		base = b[dir]
	}
	at := max(base+lat, c.last[dir])
	c.last[dir] = at
	return at
}

// sendRequest carries req from the client to the node.
func (w *World) sendRequest(c *conn, corr uint64, req kmsg.Request) {
	msg, err := w.carryRequest(req)
	if err != nil {
		w.fail("codec", "request %s v%d: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
		return
	}
	w.at(w.pathTime(c, toNode), KindToNode, c.n.id, c.id, corr, func() {
		w.arriveRequest(c, corr, msg)
	})
}

func (w *World) arriveRequest(c *conn, corr uint64, msg kmsg.Request) {
	n := c.n
	if c.reset || !c.nodeOpen {
		return
	}
	if !n.up || (c.gen != 0 && c.gen != n.gen) {
		w.refuse(c) // nobody listens, or the process that accepted it is gone
		return
	}
	if c.gen == 0 {
		c.gen = n.gen
		n.conns[c.id] = c
	}
	if w.now < c.mutedUntil || len(c.held) > 0 {
		// Muted (E8): the node reads this request once the mute ends, after the ones
		// held before it.
		c.held = append(c.held, heldRequest{corr: corr, msg: msg})
		w.scheduleRelease(c)
		return
	}
	w.readRequest(c, corr, msg)
}

// heldRequest is a request that arrived on a muted connection (E8).
type heldRequest struct {
	corr uint64
	msg  kmsg.Request
}

// scheduleRelease arranges for c's held requests to be read when its mute ends.
func (w *World) scheduleRelease(c *conn) {
	if c.releasing {
		return
	}
	c.releasing = true
	w.at(c.mutedUntil, KindToNode, c.n.id, c.id, 0, func() {
		c.releasing = false
		for len(c.held) > 0 && w.now >= c.mutedUntil {
			h := c.held[0]
			c.held = c.held[1:]
			if c.reset || !c.nodeOpen || !c.n.up || c.gen != c.n.gen {
				c.held = nil
				return
			}
			w.readRequest(c, h.corr, h.msg)
		}
		if len(c.held) > 0 {
			w.scheduleRelease(c) // muted again by a reply meanwhile
		}
	})
}

// readRequest hands one request of c to its node.
func (w *World) readRequest(c *conn, corr uint64, msg kmsg.Request) {
	n := c.n
	n.nextID++
	id := n.nextID
	c.order = append(c.order, id)
	c.corr[id] = corr
	if e := w.arrivalEpochs(n, msg); e != nil {
		if c.epochs == nil {
			c.epochs = map[uint64]map[core.TopicPartition]int32{}
		}
		c.epochs[id] = e
	}
	n.input(broker.Request{Conn: c.id, ID: id, ClientID: c.cl.name, Msg: msg,
		Principal: c.cl.principal})
}

// refuse answers a message to a dead node with a reset.
func (w *World) refuse(c *conn) {
	c.nodeOpen = false
	if c.clientOpen {
		w.at(w.now+w.netR.Exp(w.cfg.Timing.NetFloorUs*us, w.cfg.Timing.NetMeanUs*us),
			KindToClient, c.cl.actor, c.id, 0, func() { w.connLost(c) })
	}
}

// reply takes one broker reply and sends every reply that is now next in line.
func (w *World) reply(n *node, r broker.Reply) {
	c := w.conns[r.Conn]
	if c == nil || c.n != n || c.reset || !c.nodeOpen {
		return
	}
	if _, dup := c.ready[r.ID]; dup {
		w.fail("world", "node %d replied twice to request %d", n.id, r.ID)
		return
	}
	c.ready[r.ID] = r
	if _, noted := c.epochs[r.ID]; !noted { // else noted as it arrived (arrivalEpochs)
		if e := w.replyEpochs(n, r.Msg); e != nil {
			if c.epochs == nil {
				c.epochs = map[uint64]map[core.TopicPartition]int32{}
			}
			c.epochs[r.ID] = e
		}
	}
	w.aclReplied(n, c, r) // acl_check.go
	if w.clustered() {
		w.noteTerm(n, c, r.ID)
	}
	if r.MuteMs > 0 {
		c.mutedUntil = max(c.mutedUntil, w.now+r.MuteMs*ms)
		w.stats.Muted++
	}
	for len(c.order) > 0 {
		next, ok := c.ready[c.order[0]]
		if !ok {
			return
		}
		delete(c.ready, c.order[0])
		corr := c.corr[c.order[0]]
		delete(c.corr, c.order[0])
		epochs := c.epochs[c.order[0]]
		delete(c.epochs, c.order[0])
		c.order = c.order[1:]
		if next.Msg != nil {
			w.sendReply(c, corr, next.Msg, epochs)
		}
		if next.Close {
			w.closeFromNode(c)
			return
		}
	}
}

func (w *World) sendReply(c *conn, corr uint64, resp kmsg.Response,
	epochs map[core.TopicPartition]int32) {
	msg, err := w.carryResponse(resp)
	if err != nil {
		w.fail("codec", "response %s v%d: %v", kmsg.NameForKey(resp.Key()),
			resp.GetVersion(), err)
		return
	}
	w.at(w.pathTime(c, toClient), KindToClient, c.cl.actor, c.id, corr, func() {
		if !c.reset && c.clientOpen {
			w.replied = epochs
			c.cl.response(c, corr, msg)
			w.replied = nil
		}
	})
}

// arrivalEpochs notes, in a clustered world, the leader epoch of each partition's
// replica on n as a Produce arrives: the epoch its acknowledgement is decided in
// (servedEpoch). A leader that loses a partition fails the produces waiting on it
// (NOT_LEADER_OR_FOLLOWER), so an acknowledgement comes from the leadership the request
// found. Noted when the node replies instead (replyEpochs), a multi-partition Produce
// whose acknowledgement for one partition was decided at once but whose reply waited
// for another partition was credited to the epoch the first partition had moved to
// meanwhile (seed 2604). A Fetch or ListOffsets reads the high-water mark and the log
// when it is answered, so those keep the epoch at the reply.
func (w *World) arrivalEpochs(n *node, msg kmsg.Request) map[core.TopicPartition]int32 {
	m, ok := msg.(*kmsg.ProduceRequest)
	if !ok || !w.clustered() || n.b == nil {
		return nil
	}
	var tps []core.TopicPartition
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, core.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	return w.epochsOn(n, tps)
}

// epochsOn is the leader epoch of each of tps's replicas on n (-1: none hosted).
func (w *World) epochsOn(n *node, tps []core.TopicPartition) map[core.TopicPartition]int32 {
	out := make(map[core.TopicPartition]int32, len(tps))
	for _, tp := range tps {
		out[tp] = -1
		if rep := n.b.HostedReplica(tp); rep != nil {
			out[tp] = rep.LeaderEpoch()
		}
	}
	return out
}

// replyEpochs notes, in a clustered world, the leader epoch of each partition's replica
// on n as n answers a Produce, Fetch or ListOffsets (nil for other answers): the epoch
// the answer was served in (servedEpoch). Taken when the client reads the answer
// instead, a write acknowledged by a leader that was deposed while its answer
// travelled was credited to the next epoch, and a read of the new leader, whose
// high-water mark lags, was flagged stale against it (seed 1868).
func (w *World) replyEpochs(n *node, msg kmsg.Response) map[core.TopicPartition]int32 {
	if !w.clustered() || msg == nil || n.b == nil {
		return nil
	}
	var tps []core.TopicPartition
	switch m := msg.(type) {
	case *kmsg.ProduceResponse:
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, core.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			}
		}
	case *kmsg.FetchResponse:
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, core.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			}
		}
	case *kmsg.ListOffsetsResponse:
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, core.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			}
		}
	default:
		return nil
	}
	return w.epochsOn(n, tps)
}

// closeFromNode closes c at the broker's request, after the replies already sent.
func (w *World) closeFromNode(c *conn) {
	c.nodeOpen = false
	delete(c.n.conns, c.id)
	// Delivered as its own event: this runs inside the step that replied with Close,
	// and the broker is never stepped while a step of it runs (E5).
	n, gen := c.n, c.n.gen
	w.at(w.now, KindToNode, n.id, c.id, 0, func() {
		if n.up && n.gen == gen {
			n.input(broker.ConnClosed{Conn: c.id})
		}
	})
	w.at(w.pathTime(c, toClient), KindToClient, c.cl.actor, c.id, 0, func() {
		if !c.reset {
			w.connLost(c)
		}
	})
}

// closeFromClient closes c from the client's end: requests already sent still arrive,
// then the node learns the connection is gone.
func (w *World) closeFromClient(c *conn) {
	if !c.clientOpen {
		return
	}
	c.clientOpen = false
	w.at(w.pathTime(c, toNode), KindToNode, c.n.id, c.id, 0, func() {
		if c.reset || !c.nodeOpen {
			w.forget(c)
			return
		}
		c.nodeOpen = false
		if c.n.up && c.gen == c.n.gen {
			delete(c.n.conns, c.id)
			c.n.input(broker.ConnClosed{Conn: c.id})
		}
		w.forget(c)
	})
}

// resetConn breaks c at once: what is in flight is lost, both ends learn it after a
// network delay (the node only if the incarnation that accepted it is still up).
func (w *World) resetConn(c *conn) {
	if c.reset {
		return
	}
	c.reset = true
	lat := func() int64 {
		return w.netR.Exp(w.cfg.Timing.NetFloorUs*us, w.cfg.Timing.NetMeanUs*us)
	}
	if c.nodeOpen {
		c.nodeOpen = false
		n, gen := c.n, c.gen
		delete(n.conns, c.id)
		w.after(lat(), KindToNode, n.id, c.id, 1, func() {
			if n.up && gen == n.gen {
				n.input(broker.ConnClosed{Conn: c.id})
			}
		})
	}
	if c.clientOpen {
		w.after(lat(), KindToClient, c.cl.actor, c.id, 1, func() { w.connLost(c) })
	}
}

// connLost tells the client its connection is gone.
func (w *World) connLost(c *conn) {
	if !c.clientOpen {
		return
	}
	c.clientOpen = false
	w.forget(c)
	c.cl.connLost(c)
}

// forget drops a connection both ends are done with, keeping the table bounded.
func (w *World) forget(c *conn) {
	if !c.clientOpen && !c.nodeOpen {
		delete(w.conns, c.id)
	}
}

// openConns returns every connection still open at both ends, by id.
func (w *World) openConns() []*conn {
	ids := make([]uint64, 0, len(w.conns))
	for id, c := range w.conns {
		if c.clientOpen && c.nodeOpen && !c.reset {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]*conn, len(ids))
	for i, id := range ids {
		out[i] = w.conns[id]
	}
	return out
}

// carryRequest is what the node receives for req: a decoded copy made with the real
// codec when the run exercises it, else a copy of the mutable parts (the broker writes
// offsets into produced batches in place; the client keeps its bytes for retries).
func (w *World) carryRequest(req kmsg.Request) (kmsg.Request, error) {
	if w.cfg.Codec {
		raw := req.AppendTo(nil)
		out := kmsg.RequestForKey(req.Key())
		if out == nil {
			return nil, fmt.Errorf("no request type for key %d", req.Key())
		}
		out.SetVersion(req.GetVersion())
		if err := out.ReadFrom(raw); err != nil {
			return nil, err
		}
		return out, nil
	}
	p, ok := req.(*kmsg.ProduceRequest)
	if !ok {
		return req, nil
	}
	cp := *p
	cp.Topics = append([]kmsg.ProduceRequestTopic(nil), p.Topics...)
	for i := range cp.Topics {
		parts := append([]kmsg.ProduceRequestTopicPartition(nil), cp.Topics[i].Partitions...)
		for j := range parts {
			parts[j].Records = append([]byte(nil), parts[j].Records...)
		}
		cp.Topics[i].Partitions = parts
	}
	return &cp, nil
}

// carryResponse is what the client receives for resp: encoded and decoded, or with
// fetched bytes copied (they may alias the log's buffers, which later writes and
// crashes change).
func (w *World) carryResponse(resp kmsg.Response) (kmsg.Response, error) {
	if w.cfg.Codec {
		raw := resp.AppendTo(nil)
		out := kmsg.ResponseForKey(resp.Key())
		if out == nil {
			return nil, fmt.Errorf("no response type for key %d", resp.Key())
		}
		out.SetVersion(resp.GetVersion())
		if err := out.ReadFrom(raw); err != nil {
			return nil, err
		}
		return out, nil
	}
	f, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return resp, nil
	}
	cp := *f
	cp.Topics = append([]kmsg.FetchResponseTopic(nil), f.Topics...)
	for i := range cp.Topics {
		parts := append([]kmsg.FetchResponseTopicPartition(nil), cp.Topics[i].Partitions...)
		for j := range parts {
			parts[j].RecordBatches = append([]byte(nil), parts[j].RecordBatches...)
		}
		cp.Topics[i].Partitions = parts
	}
	return &cp, nil
}
