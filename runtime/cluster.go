package runtime

import (
	crand "crypto/rand"
	"math/rand"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/lifecycle"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/nodehost"
	"github.com/sluicemq/sluice/disk"
)

// A node with a metadata quorum hosts two more actors beside the broker, stepped by the
// same loop under the same lock (E5): the controller (core/controller), active while
// the node leads the quorum, and the broker lifecycle (core/lifecycle), which
// registers the node with the active controller and heartbeats. core/nodehost steps the
// three as one and routes the loop's inputs to the actors they concern (the simulator
// uses the same host); this file gives it the node's effects (hostEnv): the quorum, the
// timers, the replier and the inter-broker client. The broker reaches the controller
// through the host's ControllerPort (brokerPort), and its SendPeer to its own node
// (an AlterPartition while it leads the quorum) goes to Host.SendLocal.

type cluster struct {
	n *Node
	h *nodehost.Host
}

// newCluster makes the controller and the lifecycle of a node with a quorum; n.b and
// n.state must exist. The registration carries the data directory's storage id,
// created with the directory (disk.StorageID).
func newCluster(n *Node) (*cluster, error) {
	c := &cluster{n: n}
	ccfg := n.opts.Controller
	ccfg.NodeID, ccfg.ClusterID = n.opts.Config.NodeID, n.opts.Config.ClusterID
	lcfg := lifecycle.DefaultConfig()
	lcfg.Host, lcfg.Port = n.opts.Config.AdvertisedHost, n.opts.Config.AdvertisedPort
	lcfg.Listeners = n.registeredListeners()
	lcfg.Rack = n.opts.Rack
	lcfg.HeartbeatIntervalMs = ccfg.HeartbeatIntervalMs
	lcfg.SessionTimeoutMs = ccfg.SessionTimeoutMs
	_, _ = crand.Read(lcfg.Incarnation[:])
	sid, err := disk.StorageID(n.state, func() (id [16]byte) {
		_, _ = crand.Read(id[:])
		return id
	})
	if err != nil {
		return nil, err
	}
	lcfg.StorageID = sid
	c.h = nodehost.New(nodehost.Config{Controller: ccfg, Lifecycle: lcfg}, hostEnv{n},
		rand.New(rand.NewSource(seed())))
	c.h.SetBroker(n.b)
	voters := make([]int32, 0, len(n.opts.Voters))
	for _, v := range n.opts.Voters {
		voters = append(voters, v.ID)
	}
	c.h.Controller().SetVoters(voters) // voters are never unregistered (unregister.go)
	return c, nil
}

// step steps the node's actors with one input; DescribeQuorum is the runtime's own.
func (c *cluster) step(now core.Time, in broker.Input) {
	if r, ok := in.(broker.Request); ok && c.n.answerDescribeQuorum(r) {
		return
	}
	c.h.Step(now, in)
}

// hostEnv is the controller's and the lifecycle's Env on a node.
type hostEnv struct{ n *Node }

func (e hostEnv) Propose(rec meta.Record, token uint64) { e.n.quorum.Propose(rec, token) }
func (e hostEnv) SetTimer(at core.Time, id uint64)      { e.n.timers.add(e.n.now(), at, id) }
func (e hostEnv) CancelTimer(id uint64)                 { e.n.timers.cancel(id) }
func (e hostEnv) Reply(r broker.Reply)                  { e.n.replier.Reply(r) }
func (e hostEnv) SendPeer(p broker.PeerRequest)         { e.n.peers.Send(p) }
func (e hostEnv) Fatal(err error)                       { e.n.onFatal(err) }
func (e hostEnv) Logger() *zap.Logger                   { return e.n.lg }

// PeerAddr records where a registered broker listens, for the inter-broker client.
func (e hostEnv) PeerAddr(node int32, host string, port int32) {
	e.n.peers.SetAddr(node, hostPort(host, port))
}

// brokerPort is the broker's way to the controller (broker.ControllerPort): the host's,
// made after the broker.
type brokerPort struct{ n *Node }

func (p brokerPort) AskController(to int32, id uint64, msg controller.Message,
	timeoutMs int64) {
	p.n.cl.h.Port().AskController(to, id, msg, timeoutMs)
}

// Membership is the node's registration with the controller as its lifecycle knows it,
// for /readyz and tests; ok is false on a node without a quorum, which has none.
func (n *Node) Membership() (st lifecycle.Status, ok bool) {
	if n.cl == nil {
		return lifecycle.Status{}, false
	}
	n.stepMu.Lock()
	defer n.stepMu.Unlock()
	return n.cl.h.Lifecycle().Status(), true
}

// ControllerImage runs fn on the controller's metadata image under the step lock (for
// tests and operator tools); false on a node without a quorum.
func (n *Node) ControllerImage(fn func(im *meta.Image, active bool)) bool {
	if n.cl == nil {
		return false
	}
	n.stepMu.Lock()
	defer n.stepMu.Unlock()
	fn(n.cl.h.Controller().Image(), n.cl.h.Controller().Active())
	return true
}
