package nodehost

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/lifecycle"
	"github.com/sluicemq/sluice/core/meta"
)

// The id spaces of the controller and the lifecycle beside the broker's counters.
const (
	CtlBit = uint64(1) << 62 // controller proposals and timers
	LcBit  = uint64(1) << 61 // lifecycle timers and peer requests
	BrBit  = uint64(1) << 60 // the broker's requests to a peer's controller
)

// errNoController answers a broker's request to the controller while no quorum leader
// is known.
var errNoController = errors.New("no metadata quorum leader is known")

// Env is what the controller and the lifecycle ask of the node's driver; the broker
// has its own broker.Env, whose SendPeer to its own node the driver hands to
// Host.SendLocal. Every method returns at once. Ids and tokens arrive already tagged
// with CtlBit or LcBit: the driver delivers their completions as broker inputs
// (MetaAnswer, TimerFired, PeerReply) to Host.Step, which routes them by the bit.
type Env interface {
	// Propose proposes a record to the metadata log (as broker.Env.ProposeMeta).
	Propose(rec meta.Record, token uint64)
	SetTimer(at core.Time, id uint64)
	CancelTimer(id uint64)
	// Reply answers a connection's request the controller served.
	Reply(r broker.Reply)
	// SendPeer sends a controller RPC to another node (as broker.Env.SendPeer, E7).
	SendPeer(p broker.PeerRequest)
	// PeerAddr says where a registered broker listens (for an inter-broker client).
	PeerAddr(node int32, host string, port int32)
	// Fatal says the node must stop (the lifecycle's verdict).
	Fatal(err error)
	Logger() *zap.Logger
}

// Config is the controller's and the lifecycle's configuration; New sets their NodeID
// and ClusterID to the controller's.
type Config struct {
	Controller controller.Config
	Lifecycle  lifecycle.Config
}

// call is a controller request waiting for its answer: from a connection, or from
// this node's lifecycle or broker (local, with the lifecycle's RPC id or the broker's
// request id: broker, a ControllerPort request answered as a broker.ControllerAnswer;
// peer, the broker's SendPeer to its own node answered as a PeerReply).
type call struct {
	conn, reqID uint64
	req         kmsg.Request
	local       bool
	localID     uint64
	broker      bool
	peer        bool
}

// localMsg is a delivery between the actors of this node, made after the step.
type localMsg struct {
	toController bool
	call         uint64
	msg          controller.Message
	reply        lifecycle.Reply
	toBroker     bool
	answer       broker.ControllerAnswer
	isPeer       bool
	peer         broker.PeerReply
}

// Host steps a node's broker, controller and lifecycle as one.
type Host struct {
	env   Env
	id    int32
	inc   [16]byte // the lifecycle's incarnation
	b     *broker.Broker
	ctl   *controller.Controller
	lc    *lifecycle.Lifecycle
	calls map[uint64]call
	next  uint64
	local []localMsg
	beats beatConns // which connection carries whose heartbeats (connloss.go)
}

// New makes the controller and the lifecycle of a node; SetBroker gives it the broker,
// which must be made with broker.WithController(h.Port()) and whose Env hands a
// SendPeer to its own node to SendLocal.
func New(cfg Config, env Env, rnd core.Rand) *Host {
	h := &Host{env: env, id: cfg.Controller.NodeID, calls: map[uint64]call{},
		beats: newBeatConns()}
	h.ctl = controller.New(cfg.Controller, ctlEnv{h}, rnd)
	lcfg := cfg.Lifecycle
	lcfg.NodeID, lcfg.ClusterID = cfg.Controller.NodeID, cfg.Controller.ClusterID
	h.lc = lifecycle.New(lcfg, lcEnv{h})
	h.inc = lcfg.Incarnation
	return h
}

// SetBroker gives the host the node's broker, before its Start. The broker becomes a
// member registering the lifecycle's incarnation: it leads nothing until the controller
// unfenced that registration (core/broker membership.go).
func (h *Host) SetBroker(b *broker.Broker) {
	h.b = b
	b.SetMember(h.inc)
}

// Port is the broker's way to the controller.
func (h *Host) Port() broker.ControllerPort { return port{h} }

// Controller returns the node's controller (for reports and operator tools).
func (h *Host) Controller() *controller.Controller { return h.ctl }

// Shutdown starts the lifecycle's controlled shutdown (lifecycle.Shutdown) and delivers
// what it sends on this node.
func (h *Host) Shutdown(now core.Time) {
	h.lc.Step(now, lifecycle.Shutdown{})
	h.drain(now)
}

// Lifecycle returns the node's lifecycle.
func (h *Host) Lifecycle() *lifecycle.Lifecycle { return h.lc }

// Step steps the actors an input concerns, then delivers what they sent each other.
func (h *Host) Step(now core.Time, in broker.Input) {
	if !h.route(now, in) {
		h.b.Step(now, in)
	}
	h.drain(now)
}

// route steps in on the actors it concerns; it returns false for an input only the
// broker takes.
func (h *Host) route(now core.Time, in broker.Input) bool {
	switch in := in.(type) {
	case broker.Start:
		h.b.Step(now, in)
		h.ctl.Step(now, controller.Start{Snapshot: in.Snapshot,
			SnapshotIndex: in.SnapshotIndex, Records: in.Records})
		for _, b := range h.ctl.Image().Brokers() {
			h.learnAddr(b.ID, b.Host, b.Port)
		}
		h.lc.Step(now, lifecycle.Applied{Index: in.LastIndex()})
	case broker.MetaApplied:
		h.b.Step(now, in)
		h.ctl.Step(now, controller.MetaApplied{Index: in.Index, Record: in.Record})
		if in.Record.Kind == meta.KindBrokerRegistered {
			h.learnAddr(in.Record.NodeID, in.Record.Host, in.Record.Port)
		}
		h.lc.Step(now, lifecycle.Applied{Index: in.Index})
	case broker.MetaLeaderChanged:
		h.b.Step(now, in)
		h.ctl.Step(now, controller.LeaderChanged{Leader: in.Leader, Epoch: in.Epoch})
		h.lc.Step(now, lifecycle.LeaderChanged{Leader: in.Leader})
	case broker.MetaAnswer:
		if in.Token&CtlBit == 0 {
			return false
		}
		h.ctl.Step(now, controller.MetaAnswer{Token: in.Token &^ CtlBit,
			Outcome: in.Outcome, Index: in.Index, Leader: in.Leader})
	case broker.TimerFired:
		return h.timerFired(now, in)
	case broker.PeerReply:
		return h.peerReplied(now, in)
	case broker.ConnClosed:
		h.b.Step(now, in)
		h.connClosed(now, in.Conn)
	case broker.PeerLinkDown:
		h.b.Step(now, in)
		h.lc.Step(now, lifecycle.LinkDown{Node: in.Node})
	case broker.Request:
		msg, ok := ControllerRequest(in.Msg)
		if !ok {
			return false
		}
		if !h.b.AuthorizedClusterAction(in) { // brokers only (docs/security.md, ACLs)
			h.env.Reply(broker.Reply{Conn: in.Conn, ID: in.ID, Msg: refusal(in.Msg)})
			return true
		}
		h.noteBeat(in.Conn, msg)
		h.next++
		h.calls[h.next] = call{conn: in.Conn, reqID: in.ID, req: in.Msg}
		h.ctl.Step(now, controller.Request{ID: h.next, Msg: h.resolveTopic(msg, in.Msg)})
	default:
		return false
	}
	return true
}

func (h *Host) timerFired(now core.Time, in broker.TimerFired) bool {
	switch {
	case in.ID&CtlBit != 0:
		h.ctl.Step(now, controller.TimerFired{ID: in.ID &^ CtlBit})
	case in.ID&LcBit != 0:
		h.lc.Step(now, lifecycle.TimerFired{ID: in.ID &^ LcBit})
	default:
		return false
	}
	return true
}

func (h *Host) peerReplied(now core.Time, in broker.PeerReply) bool {
	switch {
	case in.ID&LcBit != 0:
		r := lifecycle.Reply{ID: in.ID &^ LcBit, Err: in.Err}
		if in.Err == nil {
			r.Resp, r.Err = WireResponse(in.Msg)
		}
		h.lc.Step(now, r)
	case in.ID&BrBit != 0:
		a := broker.ControllerAnswer{ID: in.ID &^ BrBit, Err: in.Err}
		if in.Err == nil {
			a.Resp, a.Err = WireResponse(in.Msg)
		}
		h.b.Step(now, a)
	default:
		return false
	}
	return true
}

// drain delivers what the actors sent each other during the step, and what that made
// them send, until nothing is left (the lifecycle has at most one RPC in flight, and
// the controller answers the broker's requests without asking anything back, so this
// ends).
func (h *Host) drain(now core.Time) {
	for len(h.local) > 0 {
		m := h.local[0]
		h.local = h.local[1:]
		switch {
		case m.toController:
			h.ctl.Step(now, controller.Request{ID: m.call, Msg: m.msg})
		case m.toBroker && m.isPeer:
			h.b.Step(now, m.peer)
		case m.toBroker:
			h.b.Step(now, m.answer)
		default:
			h.lc.Step(now, m.reply)
		}
	}
	h.local = nil
}

// SendLocal delivers the broker's SendPeer to its own node's controller (an
// AlterPartition when this node leads both the quorum and the partition), after the
// step, as the lifecycle's RPCs are; the answer comes back as its PeerReply.
func (h *Host) SendLocal(p broker.PeerRequest) {
	msg, ok := ControllerRequest(p.Msg)
	if !ok {
		h.local = append(h.local, localMsg{toBroker: true, isPeer: true, peer: broker.PeerReply{
			Node: p.Node, ID: p.ID, Err: fmt.Errorf("no local route for %T", p.Msg)}})
		return
	}
	h.next++
	h.calls[h.next] = call{req: p.Msg, peer: true, localID: p.ID}
	h.local = append(h.local, localMsg{toController: true, call: h.next,
		msg: h.resolveTopic(msg, p.Msg)})
}

// resolveTopic names the topic of an AlterPartition sent at v2+ (by id only) from the
// controller's image.
func (h *Host) resolveTopic(msg controller.Message, req kmsg.Request) controller.Message {
	ap, ok := msg.(controller.AlterPartition)
	r, isAlter := req.(*kmsg.AlterPartitionRequest)
	if !ok || !isAlter || ap.Topic != "" || len(r.Topics) == 0 {
		return msg
	}
	if t := h.ctl.Image().TopicByID(r.Topics[0].TopicID); t != nil {
		ap.Topic = t.Name
	}
	return ap
}

// learnAddr records where a registered broker listens, for the inter-broker client.
func (h *Host) learnAddr(node int32, host string, port int32) {
	if node != h.id && host != "" && port > 0 {
		h.env.PeerAddr(node, host, port)
	}
}

// ctlEnv is the controller's Env on a node.
type ctlEnv struct{ h *Host }

func (e ctlEnv) Propose(rec meta.Record, token uint64) { e.h.env.Propose(rec, token|CtlBit) }

func (e ctlEnv) Answer(id uint64, resp controller.Response) {
	h := e.h
	c, ok := h.calls[id]
	if !ok {
		return
	}
	delete(h.calls, id)
	switch {
	case c.broker:
		h.local = append(h.local, localMsg{toBroker: true,
			answer: broker.ControllerAnswer{ID: c.localID, Resp: resp}})
	case c.peer:
		h.local = append(h.local, localMsg{toBroker: true, isPeer: true,
			peer: broker.PeerReply{Node: h.id, ID: c.localID,
				Msg: ControllerResponse(c.req, resp)}})
	case c.local:
		h.local = append(h.local, localMsg{reply: lifecycle.Reply{ID: c.localID,
			Resp: resp}})
	default:
		h.env.Reply(broker.Reply{Conn: c.conn, ID: c.reqID,
			Msg: ControllerResponse(c.req, resp)})
	}
}

func (e ctlEnv) SetTimer(at core.Time, id uint64) { e.h.env.SetTimer(at, id|CtlBit) }
func (e ctlEnv) CancelTimer(id uint64)            { e.h.env.CancelTimer(id | CtlBit) }
func (e ctlEnv) Logger() *zap.Logger              { return e.h.env.Logger().Named("controller") }

// port is the broker's way to the controller (broker.ControllerPort): this node's own,
// delivered after the step like the lifecycle's requests, or the quorum leader's over
// the wire. A producer-id block is asked with the broker epoch the lifecycle
// registered, as Kafka's AllocateProducerIds carries it.
type port struct{ h *Host }

func (p port) AskController(to int32, id uint64, msg controller.Message, timeoutMs int64) {
	h := p.h
	if m, ok := msg.(controller.AllocateProducerIDs); ok {
		m.BrokerEpoch = h.lc.Status().Epoch
		msg = m
	}
	fail := func(err error) {
		h.local = append(h.local, localMsg{toBroker: true,
			answer: broker.ControllerAnswer{ID: id, Err: err}})
	}
	switch {
	case to < 0:
		fail(errNoController)
	case to == h.id:
		h.next++
		h.calls[h.next] = call{local: true, broker: true, localID: id}
		h.local = append(h.local, localMsg{toController: true, call: h.next, msg: msg})
	default:
		req, err := WireRequest(msg)
		if err != nil {
			fail(err)
			return
		}
		h.env.SendPeer(broker.PeerRequest{Node: to, ID: id | BrBit, Msg: req,
			TimeoutMs: timeoutMs})
	}
}

// lcEnv is the lifecycle's Env on a node.
type lcEnv struct{ h *Host }

func (e lcEnv) Send(to int32, id uint64, msg controller.Message, timeoutMs int64) {
	h := e.h
	if to == h.id {
		h.next++
		h.calls[h.next] = call{local: true, localID: id}
		h.local = append(h.local, localMsg{toController: true, call: h.next, msg: msg})
		return
	}
	req, err := WireRequest(msg)
	if err != nil {
		h.local = append(h.local, localMsg{reply: lifecycle.Reply{ID: id, Err: err}})
		return
	}
	h.env.SendPeer(broker.PeerRequest{Node: to, ID: id | LcBit, Msg: req,
		TimeoutMs: timeoutMs})
}

func (e lcEnv) SetTimer(at core.Time, id uint64) { e.h.env.SetTimer(at, id|LcBit) }
func (e lcEnv) CancelTimer(id uint64)            { e.h.env.CancelTimer(id | LcBit) }
func (e lcEnv) Fatal(err error)                  { e.h.env.Fatal(err) }
func (e lcEnv) Logger() *zap.Logger              { return e.h.env.Logger() }
