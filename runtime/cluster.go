package runtime

import (
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/lifecycle"
	"github.com/sluicemq/sluice/core/meta"
)

// A node with a metadata quorum hosts two more actors beside the broker, stepped by the
// same loop under the same lock (E5): the controller (core/controller), active while
// the node leads the quorum, and the broker lifecycle (core/lifecycle), which
// registers the node with the active controller and heartbeats. The broker reaches the
// controller through its ControllerPort (brokerPort): topic creations and producer-id
// blocks. The loop's inputs are
// the broker's; cluster.route sends each to the actors it concerns. Tokens, timer ids
// and peer request ids of the two are kept apart from the broker's (small counters) by
// a high bit each, as are the broker's requests to a peer's controller. A lifecycle or
// broker RPC to the controller on its own node never leaves the process: it is queued
// and delivered after the step that sent it (local), as its answer is.

const (
	ctlBit = uint64(1) << 62 // controller proposals and timers
	lcBit  = uint64(1) << 61 // lifecycle timers and peer requests
	brBit  = uint64(1) << 60 // the broker's requests to a peer's controller
)

// errNoController answers a broker's request to the controller while no quorum leader
// is known.
var errNoController = errors.New("no metadata quorum leader is known")

var codeNotController = kerr.NotController.Code

// ctlCall is a controller request waiting for its answer: from a connection, or from
// this node's lifecycle or broker (local, with the lifecycle's RPC id or the broker's
// request id: broker, a ControllerPort request answered as a broker.ControllerAnswer;
// peer, the broker's SendPeer to its own node answered as a PeerReply).
type ctlCall struct {
	conn, reqID uint64
	req         kmsg.Request
	local       bool
	localID     uint64
	broker      bool // local, from the broker's ControllerPort
	peer        bool // local, the broker's SendPeer to this node (AlterPartition)
}

// localMsg is a delivery between the actors of this node, made after the step: to the
// controller, to the broker (toBroker: answer, or peer when isPeer) or to the lifecycle.
type localMsg struct {
	toController bool
	call         uint64 // toController: the controller request id
	msg          controller.Message
	reply        lifecycle.Reply // to the lifecycle
	toBroker     bool
	answer       broker.ControllerAnswer
	isPeer       bool
	peer         broker.PeerReply // isPeer: the answer to the broker's SendPeer
}

type cluster struct {
	n     *Node
	ctl   *controller.Controller
	lc    *lifecycle.Lifecycle
	calls map[uint64]ctlCall
	next  uint64
	local []localMsg
}

// newCluster makes the controller and the lifecycle of a node with a quorum.
func newCluster(n *Node) *cluster {
	c := &cluster{n: n, calls: map[uint64]ctlCall{}}
	ccfg := n.opts.Controller
	ccfg.NodeID, ccfg.ClusterID = n.opts.Config.NodeID, n.opts.Config.ClusterID
	c.ctl = controller.New(ccfg, ctlEnv{c}, rand.New(rand.NewSource(seed())))
	lcfg := lifecycle.DefaultConfig()
	lcfg.NodeID, lcfg.ClusterID = n.opts.Config.NodeID, n.opts.Config.ClusterID
	lcfg.Host, lcfg.Port = n.opts.Config.AdvertisedHost, n.opts.Config.AdvertisedPort
	lcfg.Listeners = n.registeredListeners()
	lcfg.Rack = n.opts.Rack
	lcfg.HeartbeatIntervalMs = ccfg.HeartbeatIntervalMs
	_, _ = crand.Read(lcfg.Incarnation[:])
	c.lc = lifecycle.New(lcfg, lcEnv{c})
	return c
}

// route steps in on the actors it concerns; it returns false for an input only the
// broker takes.
func (c *cluster) route(now core.Time, in broker.Input) bool {
	switch in := in.(type) {
	case broker.Start:
		c.n.b.Step(now, in)
		c.ctl.Step(now, controller.Start{Snapshot: in.Snapshot,
			SnapshotIndex: in.SnapshotIndex, Records: in.Records})
		for _, b := range c.ctl.Image().Brokers() {
			c.learnAddr(b.ID, b.Host, b.Port)
		}
		c.lc.Step(now, lifecycle.Applied{Index: in.LastIndex()})
	case broker.MetaApplied:
		c.n.b.Step(now, in)
		c.ctl.Step(now, controller.MetaApplied{Index: in.Index, Record: in.Record})
		if in.Record.Kind == meta.KindBrokerRegistered {
			c.learnAddr(in.Record.NodeID, in.Record.Host, in.Record.Port)
		}
		c.lc.Step(now, lifecycle.Applied{Index: in.Index})
	case broker.MetaLeaderChanged:
		c.n.b.Step(now, in)
		c.ctl.Step(now, controller.LeaderChanged{Leader: in.Leader, Epoch: in.Epoch})
		c.lc.Step(now, lifecycle.LeaderChanged{Leader: in.Leader})
	case broker.MetaAnswer:
		if in.Token&ctlBit == 0 {
			return false
		}
		c.ctl.Step(now, controller.MetaAnswer{Token: in.Token &^ ctlBit,
			Outcome: in.Outcome, Index: in.Index, Leader: in.Leader})
	case broker.TimerFired:
		switch {
		case in.ID&ctlBit != 0:
			c.ctl.Step(now, controller.TimerFired{ID: in.ID &^ ctlBit})
		case in.ID&lcBit != 0:
			c.lc.Step(now, lifecycle.TimerFired{ID: in.ID &^ lcBit})
		default:
			return false
		}
	case broker.PeerReply:
		switch {
		case in.ID&lcBit != 0:
			c.peerReply(now, in)
		case in.ID&brBit != 0:
			c.n.b.Step(now, brokerAnswer(in))
		default:
			return false
		}
	case broker.Request:
		if c.n.answerDescribeQuorum(in) {
			return true
		}
		msg, ok := controllerRequest(in.Msg)
		if !ok {
			return false
		}
		c.next++
		c.calls[c.next] = ctlCall{conn: in.Conn, reqID: in.ID, req: in.Msg}
		c.ctl.Step(now, controller.Request{ID: c.next, Msg: c.resolveTopic(msg, in.Msg)})
	default:
		return false
	}
	return true
}

// drain delivers what the actors sent each other during the step, and what that made
// them send, until nothing is left (the lifecycle has at most one RPC in flight, and
// the controller answers the broker's requests without asking anything back, so this
// ends).
func (c *cluster) drain(now core.Time) {
	for len(c.local) > 0 {
		m := c.local[0]
		c.local = c.local[1:]
		switch {
		case m.toController:
			c.ctl.Step(now, controller.Request{ID: m.call, Msg: m.msg})
		case m.toBroker:
			if m.isPeer {
				c.n.b.Step(now, m.peer)
			} else {
				c.n.b.Step(now, m.answer)
			}
		default:
			c.lc.Step(now, m.reply)
		}
	}
	c.local = nil
}

func (c *cluster) peerReply(now core.Time, in broker.PeerReply) {
	r := lifecycle.Reply{ID: in.ID &^ lcBit, Err: in.Err}
	if in.Err == nil {
		resp, err := wireResponse(in.Msg)
		r.Resp, r.Err = resp, err
	}
	c.lc.Step(now, r)
}

// sendLocal delivers the broker's SendPeer to its own node's controller (an
// AlterPartition when this node leads both the quorum and the partition), after the
// step, as the lifecycle's RPCs are; the answer comes back as its PeerReply.
func (c *cluster) sendLocal(p broker.PeerRequest) {
	msg, ok := controllerRequest(p.Msg)
	if !ok {
		c.local = append(c.local, localMsg{toBroker: true, isPeer: true, peer: broker.PeerReply{
			Node: p.Node, ID: p.ID, Err: fmt.Errorf("no local route for %T", p.Msg)}})
		return
	}
	c.next++
	c.calls[c.next] = ctlCall{req: p.Msg, peer: true, localID: p.ID}
	c.local = append(c.local, localMsg{toController: true, call: c.next,
		msg: c.resolveTopic(msg, p.Msg)})
}

// resolveTopic names the topic of an AlterPartition sent at v2+ (by id only) from the
// controller's image.
func (c *cluster) resolveTopic(msg controller.Message, req kmsg.Request) controller.Message {
	ap, ok := msg.(controller.AlterPartition)
	r, isAlter := req.(*kmsg.AlterPartitionRequest)
	if !ok || !isAlter || ap.Topic != "" || len(r.Topics) == 0 {
		return msg
	}
	if t := c.ctl.Image().TopicByID(r.Topics[0].TopicID); t != nil {
		ap.Topic = t.Name
	}
	return ap
}

// learnAddr records where a registered broker listens, for the inter-broker client.
func (c *cluster) learnAddr(node int32, host string, port int32) {
	if node != c.n.opts.Config.NodeID && host != "" && port > 0 {
		c.n.peers.SetAddr(node, hostPort(host, port))
	}
}

// ctlEnv is the controller's Env on a node.
type ctlEnv struct{ c *cluster }

func (e ctlEnv) Propose(rec meta.Record, token uint64) {
	e.c.n.quorum.Propose(rec, token|ctlBit)
}

func (e ctlEnv) Answer(id uint64, resp controller.Response) {
	call, ok := e.c.calls[id]
	if !ok {
		return
	}
	delete(e.c.calls, id)
	if call.broker {
		e.c.local = append(e.c.local, localMsg{toBroker: true,
			answer: broker.ControllerAnswer{ID: call.localID, Resp: resp}})
		return
	}
	if call.peer {
		e.c.local = append(e.c.local, localMsg{toBroker: true, isPeer: true,
			peer: broker.PeerReply{Node: e.c.n.opts.Config.NodeID, ID: call.localID,
				Msg: controllerResponse(call.req, resp)}})
		return
	}
	if call.local {
		e.c.local = append(e.c.local, localMsg{reply: lifecycle.Reply{ID: call.localID,
			Resp: resp}})
		return
	}
	e.c.n.replier.Reply(broker.Reply{Conn: call.conn, ID: call.reqID,
		Msg: controllerResponse(call.req, resp)})
}

func (e ctlEnv) SetTimer(at core.Time, id uint64) {
	e.c.n.timers.add(e.c.n.now(), at, id|ctlBit)
}
func (e ctlEnv) CancelTimer(id uint64) { e.c.n.timers.cancel(id | ctlBit) }
func (e ctlEnv) Logger() *zap.Logger   { return e.c.n.lg.Named("controller") }

// brokerPort is the broker's way to the controller (broker.ControllerPort): this node's
// own, delivered after the step like the lifecycle's requests, or the quorum leader's
// over the wire (ctlwire.go). A producer-id block is asked with the broker epoch the
// lifecycle registered, as Kafka's AllocateProducerIds carries it.
type brokerPort struct{ n *Node }

func (p brokerPort) AskController(to int32, id uint64, msg controller.Message,
	timeoutMs int64) {
	c := p.n.cl
	if m, ok := msg.(controller.AllocateProducerIDs); ok {
		m.BrokerEpoch = c.lc.Status().Epoch
		msg = m
	}
	fail := func(err error) {
		c.local = append(c.local, localMsg{toBroker: true,
			answer: broker.ControllerAnswer{ID: id, Err: err}})
	}
	switch {
	case to < 0:
		fail(errNoController)
	case to == p.n.opts.Config.NodeID:
		c.next++
		c.calls[c.next] = ctlCall{local: true, broker: true, localID: id}
		c.local = append(c.local, localMsg{toController: true, call: c.next, msg: msg})
	default:
		req, err := wireRequest(msg)
		if err != nil {
			fail(err)
			return
		}
		p.n.peers.Send(broker.PeerRequest{Node: to, ID: id | brBit, Msg: req,
			TimeoutMs: timeoutMs})
	}
}

// brokerAnswer converts a peer controller's reply to one of the broker's requests.
func brokerAnswer(in broker.PeerReply) broker.ControllerAnswer {
	a := broker.ControllerAnswer{ID: in.ID &^ brBit, Err: in.Err}
	if in.Err == nil {
		a.Resp, a.Err = wireResponse(in.Msg)
	}
	return a
}

// lcEnv is the lifecycle's Env on a node.
type lcEnv struct{ c *cluster }

func (e lcEnv) Send(to int32, id uint64, msg controller.Message, timeoutMs int64) {
	c := e.c
	if to == c.n.opts.Config.NodeID {
		c.next++
		c.calls[c.next] = ctlCall{local: true, localID: id}
		c.local = append(c.local, localMsg{toController: true, call: c.next, msg: msg})
		return
	}
	req, err := wireRequest(msg)
	if err != nil {
		c.local = append(c.local, localMsg{reply: lifecycle.Reply{ID: id, Err: err}})
		return
	}
	c.n.peers.Send(broker.PeerRequest{Node: to, ID: id | lcBit, Msg: req,
		TimeoutMs: timeoutMs})
}

func (e lcEnv) SetTimer(at core.Time, id uint64) {
	e.c.n.timers.add(e.c.n.now(), at, id|lcBit)
}
func (e lcEnv) CancelTimer(id uint64) { e.c.n.timers.cancel(id | lcBit) }
func (e lcEnv) Fatal(err error)       { e.c.n.onFatal(err) }
func (e lcEnv) Logger() *zap.Logger   { return e.c.n.lg }

// Membership is the node's registration with the controller as its lifecycle knows it,
// for /readyz and tests; ok is false on a node without a quorum, which has none.
func (n *Node) Membership() (st lifecycle.Status, ok bool) {
	if n.cl == nil {
		return lifecycle.Status{}, false
	}
	n.stepMu.Lock()
	defer n.stepMu.Unlock()
	return n.cl.lc.Status(), true
}

// ControllerImage runs fn on the controller's metadata image under the step lock (for
// tests and operator tools); false on a node without a quorum.
func (n *Node) ControllerImage(fn func(im *meta.Image, active bool)) bool {
	if n.cl == nil {
		return false
	}
	n.stepMu.Lock()
	defer n.stepMu.Unlock()
	fn(n.cl.ctl.Image(), n.cl.ctl.Active())
	return true
}
