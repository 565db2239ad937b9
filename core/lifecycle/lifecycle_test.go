package lifecycle

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
)

type sent struct {
	to  int32
	id  uint64
	msg controller.Message
}

type fakeEnv struct {
	sent   []sent
	timers map[uint64]core.Time
	fatal  error
}

func (e *fakeEnv) Send(to int32, id uint64, msg controller.Message, _ int64) {
	e.sent = append(e.sent, sent{to, id, msg})
}
func (e *fakeEnv) SetTimer(at core.Time, id uint64) { e.timers[id] = at }
func (e *fakeEnv) CancelTimer(id uint64)            { delete(e.timers, id) }
func (e *fakeEnv) Fatal(err error)                  { e.fatal = err }
func (e *fakeEnv) Logger() *zap.Logger              { return zap.NewNop() }

type harness struct {
	t   *testing.T
	env *fakeEnv
	l   *Lifecycle
	now core.Time
}

func newHarness(t *testing.T) *harness {
	cfg := DefaultConfig()
	cfg.NodeID, cfg.ClusterID, cfg.Host, cfg.Port = 2, "c1", "127.0.0.1", 9093
	env := &fakeEnv{timers: map[uint64]core.Time{}}
	return &harness{t: t, env: env, l: New(cfg, env)}
}

func (h *harness) step(in Input) { h.l.Step(h.now, in) }

// last returns the one RPC sent since the previous call, failing if there is not exactly one.
func (h *harness) last() sent {
	h.t.Helper()
	require.Len(h.t, h.env.sent, 1, "exactly one RPC in flight")
	s := h.env.sent[0]
	h.env.sent = nil
	return s
}

// advance moves time to the earliest armed timer and fires it.
func (h *harness) advance() {
	h.t.Helper()
	require.Len(h.t, h.env.timers, 1, "one timer armed")
	for id, at := range h.env.timers {
		delete(h.env.timers, id)
		h.now = at
		h.step(TimerFired{ID: id})
	}
}

func TestRegistersWithTheLeaderThenHeartbeatsUntilUnfenced(t *testing.T) {
	h := newHarness(t)
	h.step(Applied{Index: 5})
	require.Empty(t, h.env.sent, "no controller known yet")
	h.step(LeaderChanged{Leader: 1})
	reg := h.last()
	require.Equal(t, int32(1), reg.to)
	require.Equal(t, controller.RegisterBroker{NodeID: 2, ClusterID: "c1", Host: "127.0.0.1",
		Port: 9093}, reg.msg)
	h.step(Reply{ID: reg.id, Resp: controller.RegisterBrokerResponse{BrokerEpoch: 7}})
	hb := h.last()
	require.Equal(t, controller.Heartbeat{NodeID: 2, BrokerEpoch: 7, MetadataIndex: 5}, hb.msg)
	require.Equal(t, Status{Leader: 1, Registered: true, Epoch: 7, Fenced: true}, h.l.Status())

	h.step(Applied{Index: 9})
	h.step(Reply{ID: hb.id, Resp: controller.HeartbeatResponse{Fenced: true}})
	require.Empty(t, h.env.sent, "the next heartbeat waits for its interval")
	start := h.now
	h.advance()
	require.Equal(t, int64(250), (h.now - start).Millis(), "fenced: an eighth of 2 s")
	hb = h.last()
	require.Equal(t, uint64(9), hb.msg.(controller.Heartbeat).MetadataIndex)
	h.step(Reply{ID: hb.id, Resp: controller.HeartbeatResponse{}})
	require.False(t, h.l.Status().Fenced)
	start = h.now
	h.advance()
	require.Equal(t, int64(2000), (h.now - start).Millis(), "unfenced: every 2 s")
	require.IsType(t, controller.Heartbeat{}, h.last().msg)
}

func TestStaleEpochRegistersAgain(t *testing.T) {
	h := newHarness(t)
	h.step(LeaderChanged{Leader: 1})
	h.step(Reply{ID: h.last().id, Resp: controller.RegisterBrokerResponse{BrokerEpoch: 3}})
	hb := h.last()
	h.step(Reply{ID: hb.id, Resp: controller.HeartbeatResponse{Err: kerr.StaleBrokerEpoch.Code}})
	require.IsType(t, controller.RegisterBroker{}, h.last().msg)
	require.False(t, h.l.Status().Registered)
}

func TestNewLeaderGetsTheNextRPCAndLateRepliesAreIgnored(t *testing.T) {
	h := newHarness(t)
	h.step(LeaderChanged{Leader: 1})
	first := h.last()
	h.step(Reply{ID: first.id, Resp: controller.RegisterBrokerResponse{
		Err: kerr.NotController.Code}})
	require.Empty(t, h.env.sent, "backs off")
	h.step(LeaderChanged{Leader: 3})
	reg := h.last()
	require.Equal(t, int32(3), reg.to, "the new controller at once")
	h.step(Reply{ID: first.id, Resp: controller.RegisterBrokerResponse{BrokerEpoch: 99}})
	require.False(t, h.l.Status().Registered, "an answer to an old RPC is ignored")
	h.step(Reply{ID: reg.id, Err: errors.New("connection refused")})
	require.Empty(t, h.env.sent)
	h.advance()
	require.IsType(t, controller.RegisterBroker{}, h.last().msg, "retried after the backoff")
}

func TestAnotherClustersControllerStopsTheNode(t *testing.T) {
	h := newHarness(t)
	h.step(LeaderChanged{Leader: 1})
	h.step(Reply{ID: h.last().id, Resp: controller.RegisterBrokerResponse{
		Err: kerr.InconsistentClusterID.Code}})
	require.ErrorContains(t, h.env.fatal, "another cluster")
	h.step(LeaderChanged{Leader: 2})
	require.Empty(t, h.env.sent, "a refused node sends nothing more")
}

// A restart within the old life's session is refused as a duplicate until that
// session runs out: retried, and accepted then.
func TestDuplicateRegistrationRetriesUntilAccepted(t *testing.T) {
	h := newHarness(t)
	h.step(LeaderChanged{Leader: 1})
	start := h.now
	for h.now < start.AddMillis(9000) { // one session timeout (9 s) of refusals
		h.step(Reply{ID: h.last().id, Resp: controller.RegisterBrokerResponse{
			Err: kerr.DuplicateBrokerRegistration.Code}})
		require.Nil(t, h.env.fatal, "a previous life's session may still run")
		h.advance()
	}
	h.step(Reply{ID: h.last().id, Resp: controller.RegisterBrokerResponse{BrokerEpoch: 4}})
	require.True(t, h.l.Status().Registered)
	require.Nil(t, h.env.fatal)
}

// Refusals that go on for twice broker.session.timeout.ms mean another live process
// holds the id: the node gives up with ErrNodeIDInUse and sends nothing more.
func TestALiveDuplicateIDStopsTheNode(t *testing.T) {
	h := newHarness(t)
	h.step(LeaderChanged{Leader: 1})
	start := h.now
	for h.env.fatal == nil {
		require.Less(t, int64(h.now-start), int64(19_000)*1e6, "gave up in time")
		h.step(Reply{ID: h.last().id, Resp: controller.RegisterBrokerResponse{
			Err: kerr.DuplicateBrokerRegistration.Code}})
		if h.env.fatal == nil {
			h.advance()
		}
	}
	require.GreaterOrEqual(t, int64(h.now-start), int64(18_000)*1e6, "not before 2×9 s")
	require.ErrorIs(t, h.env.fatal, ErrNodeIDInUse)
	require.ErrorContains(t, h.env.fatal, "--id")
	h.step(LeaderChanged{Leader: 2})
	require.Empty(t, h.env.sent, "a stopped node sends nothing more")
}

// A controlled shutdown replaces heartbeats with ControlledShutdown until the
// controller answers it; a heartbeat in flight is answered first; a refusal is asked
// again after the backoff, a new controller at once; once done nothing more is sent.
func TestControlledShutdownAsksUntilDone(t *testing.T) {
	h := newHarness(t)
	h.step(LeaderChanged{Leader: 1})
	h.step(Reply{ID: h.last().id, Resp: controller.RegisterBrokerResponse{BrokerEpoch: 7}})
	hb := h.last()
	h.step(Shutdown{})
	require.Empty(t, h.env.sent, "waits for the heartbeat in flight")
	h.step(Reply{ID: hb.id, Resp: controller.HeartbeatResponse{}})
	cs := h.last()
	require.Equal(t, controller.ControlledShutdown{NodeID: 2, BrokerEpoch: 7}, cs.msg)
	h.step(Reply{ID: cs.id, Resp: controller.ControlledShutdownResponse{
		Err: kerr.NotController.Code}})
	require.Empty(t, h.env.sent, "backs off")
	h.step(LeaderChanged{Leader: 3})
	cs = h.last()
	require.Equal(t, int32(3), cs.to)
	// A peer's controller answers over the wire as a BrokerHeartbeat response.
	h.step(Reply{ID: cs.id, Resp: controller.HeartbeatResponse{ShuttingDown: false}})
	require.False(t, h.l.Status().ShutDown, "not done until ShouldShutDown")
	h.advance()
	cs = h.last()
	require.IsType(t, controller.ControlledShutdown{}, cs.msg)
	h.step(Reply{ID: cs.id, Resp: controller.HeartbeatResponse{ShuttingDown: true}})
	require.True(t, h.l.Status().ShutDown)
	require.Empty(t, h.env.timers)
	h.step(LeaderChanged{Leader: 1})
	require.Empty(t, h.env.sent, "nothing after the shutdown")
}

// A node that never registered has nothing to move: done at once.
func TestControlledShutdownOfAnUnregisteredNode(t *testing.T) {
	h := newHarness(t)
	h.step(Shutdown{})
	require.True(t, h.l.Status().ShutDown)
	require.Empty(t, h.env.sent)

	h = newHarness(t)
	h.step(LeaderChanged{Leader: 1})
	reg := h.last()
	h.step(Shutdown{})
	require.False(t, h.l.Status().ShutDown, "a registration in flight may succeed")
	h.step(Reply{ID: reg.id, Resp: controller.RegisterBrokerResponse{BrokerEpoch: 2}})
	cs := h.last()
	require.IsType(t, controller.ControlledShutdown{}, cs.msg)
	h.step(Reply{ID: cs.id, Resp: controller.ControlledShutdownResponse{}})
	require.True(t, h.l.Status().ShutDown)
}

// The controller fences a broker soon after the connection carrying its heartbeats
// closes, unless it hears from it again: a link to the controller that went down makes
// the next heartbeat go at once (not at the next interval), except after a failed RPC,
// whose backoff stands.
func TestALinkDownToTheControllerHeartbeatsAtOnce(t *testing.T) {
	h := newHarness(t)
	h.step(LeaderChanged{Leader: 1})
	reg := h.last()
	h.step(Reply{ID: reg.id, Resp: controller.RegisterBrokerResponse{BrokerEpoch: 7}})
	hb := h.last()
	h.step(Reply{ID: hb.id, Resp: controller.HeartbeatResponse{}})
	require.Empty(t, h.env.sent, "unfenced: the next heartbeat in 2 s")
	h.now = h.now.AddMillis(300)
	h.step(LinkDown{Node: 3})
	require.Empty(t, h.env.sent, "a link to another node changes nothing")
	h.step(LinkDown{Node: 1})
	hb = h.last()
	require.Equal(t, controller.Heartbeat{NodeID: 2, BrokerEpoch: 7}, hb.msg)
	h.step(LinkDown{Node: 1})
	require.Empty(t, h.env.sent, "one RPC in flight at a time")
	h.step(Reply{ID: hb.id, Err: errors.New("connection reset")})
	require.Empty(t, h.env.sent)
	h.step(LinkDown{Node: 1})
	require.Empty(t, h.env.sent, "after a failure the backoff stands")
	h.advance()
	hb = h.last()
	require.Equal(t, controller.Heartbeat{NodeID: 2, BrokerEpoch: 7}, hb.msg)
	h.step(Reply{ID: hb.id, Resp: controller.HeartbeatResponse{}})
	h.step(LinkDown{Node: 1})
	require.Len(t, h.env.sent, 1, "through again: a link down heartbeats at once")
}
