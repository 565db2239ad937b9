package broker

// A broker wired to a controller over one metadata log, as a node with a metadata
// quorum wires them (runtime/cluster.go): the broker asks through its ControllerPort,
// this node's controller takes the request after the step and its answer comes back as
// a ControllerAnswer; the proposals of both commit in order to the one log, which both
// apply. Requests to another node's controller (the broker believes another node
// leads) are kept in remote for the test to answer, as forwarded CreateTopics are kept
// in env.peerReqs.

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

type controllerAsk struct {
	to  int32
	id  uint64
	msg controller.Message
}

type quorumHarness struct {
	*harness
	ctl     *controller.Controller
	ctlEnv  *ctlEnv
	asks    []controllerAsk      // from the broker, not delivered yet
	remote  []controllerAsk      // to another node's controller, for the test
	answers []ControllerAnswer   // from the controller, not delivered yet
	calls   map[uint64]uint64    // controller request id → the broker's ask id
	epoch   map[int32]int64      // registered brokers' epochs
	reqSeq  uint64               // controller request ids
	asked   []controller.Message // every message the broker asked, in order
	ctlRecs map[meta.Kind]int    // records the controller proposed, by kind
}

// ctlEnv is the controller's Env: proposals and answers queue for the harness.
type ctlEnv struct {
	lg        *zap.Logger
	proposals []proposal
	answers   map[uint64]controller.Response
	order     []uint64
}

func (e *ctlEnv) Propose(rec meta.Record, token uint64) {
	e.proposals = append(e.proposals, proposal{rec, token})
}
func (e *ctlEnv) Answer(id uint64, r controller.Response) {
	e.answers[id] = r
	e.order = append(e.order, id)
}
func (e *ctlEnv) SetTimer(core.Time, uint64) {}
func (e *ctlEnv) CancelTimer(uint64)         {}
func (e *ctlEnv) Logger() *zap.Logger        { return e.lg }

// newQuorumHarness boots node 1's broker and controller with leader announced as the
// quorum's leader, and registers brokers 1..live unfenced (rack "r<id>").
func newQuorumHarness(t *testing.T, leader int32, live int, opts ...func(*Config)) *quorumHarness {
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, cfg: cfg, env: newFakeEnv(t), now: harnessStart, seed: 1,
		leader: leader}
	q := &quorumHarness{harness: h, calls: map[uint64]uint64{}, epoch: map[int32]int64{},
		ctlRecs: map[meta.Kind]int{}}
	q.ctlEnv = &ctlEnv{lg: zaptest.NewLogger(t).Named("controller"),
		answers: map[uint64]controller.Response{}}
	ccfg := controller.DefaultConfig()
	ccfg.NodeID, ccfg.ClusterID = cfg.NodeID, cfg.ClusterID
	q.ctl = controller.New(ccfg, q.ctlEnv, rand.New(rand.NewSource(7)))
	h.brokerOpts = []Option{WithController(q)}
	h.onApplied = func(idx uint64, rec meta.Record) {
		q.ctl.Step(h.now, controller.MetaApplied{Index: idx, Record: rec})
	}
	h.extra = q.deliverController
	q.ctl.Step(h.now, controller.Start{})
	h.boot()
	q.ctl.Step(h.now, controller.LeaderChanged{Leader: leader, Epoch: 1})
	h.settle()
	for id := int32(1); id <= int32(live); id++ {
		q.register(id, meta.BrokerUnfenced)
	}
	return q
}

// register commits a registration of broker id in state st.
func (q *quorumHarness) register(id int32, st meta.BrokerState) {
	e := int64(len(q.env.committed) + 100)
	q.epoch[id] = e
	q.commitMeta(meta.Record{Kind: meta.KindBrokerRegistered, NodeID: id, BrokerEpoch: e,
		Host: "127.0.0.1", Port: 9090 + id, Rack: "", BrokerState: st})
	q.settle()
}

// AskController is the broker's ControllerPort.
func (q *quorumHarness) AskController(to int32, id uint64, msg controller.Message,
	_ int64) {
	q.asked = append(q.asked, msg)
	if m, ok := msg.(controller.AllocateProducerIDs); ok && to == q.cfg.NodeID {
		m.BrokerEpoch = q.epoch[m.NodeID] // as the runtime's port adds the lifecycle's
		msg = m
	}
	q.asks = append(q.asks, controllerAsk{to: to, id: id, msg: msg})
}

// deliverController hands the broker's asks to the controller (or to remote), commits
// the controller's proposals and hands its answers to the broker.
func (q *quorumHarness) deliverController() int {
	n := 0
	asks := q.asks
	q.asks = nil
	for _, a := range asks {
		n++
		if a.to != q.cfg.NodeID {
			q.remote = append(q.remote, a)
			continue
		}
		q.reqSeq++
		q.calls[q.reqSeq] = a.id
		q.ctl.Step(q.now, controller.Request{ID: q.reqSeq, Msg: a.msg})
	}
	props := q.ctlEnv.proposals
	q.ctlEnv.proposals = nil
	for _, p := range props {
		n++
		q.ctlRecs[p.rec.Kind]++
		idx := q.commitMeta(p.rec)
		q.ctl.Step(q.now, controller.MetaAnswer{Token: p.token, Outcome: controller.Committed,
			Index: idx})
	}
	order := q.ctlEnv.order
	q.ctlEnv.order = nil
	for _, id := range order {
		n++
		resp := q.ctlEnv.answers[id]
		delete(q.ctlEnv.answers, id)
		q.step(ControllerAnswer{ID: q.calls[id], Resp: resp})
		delete(q.calls, id)
	}
	return n
}

// takeRemote removes and returns the requests made to another node's controller.
func (q *quorumHarness) takeRemote() []controllerAsk {
	out := q.remote
	q.remote = nil
	return out
}

// takePeers removes and returns the inter-broker requests sent (forwarded creations).
func (q *quorumHarness) takePeers() []PeerRequest {
	out := q.env.peerReqs
	q.env.peerReqs = nil
	return out
}

// brokerProposed counts the records of kind k the broker proposed itself.
func (q *quorumHarness) brokerProposed(k meta.Kind) int {
	n := 0
	for _, r := range q.env.committed {
		if r.Kind == k {
			n++
		}
	}
	return n - q.ctlRecs[k]
}

// states returns a topic's partition states, requiring it to exist.
func (q *quorumHarness) states(topic string) []meta.PartitionState {
	t := q.b.image.Topic(topic)
	require.NotNil(q.t, t, "topic %s", topic)
	return t.States
}
