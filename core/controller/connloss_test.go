package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/meta"
)

// connLossCluster is three unfenced brokers and a topic of six partitions over them.
func connLossCluster(t *testing.T, cfg Config) (*harness, map[int32]int64) {
	h := newHarness(t, cfg, 1)
	h.settle()
	epochs := h.cluster(3, 0)
	require.Zero(t, h.createTopic("t", 6, 3).Err)
	return h, epochs
}

// after advances ms, fires what is due and commits what the controller proposed.
func (h *harness) after(ms int64) {
	h.advance(ms)
	h.settle()
}

func (h *harness) brokerState(id int32) meta.BrokerState {
	b, ok := h.image.Broker(id)
	require.True(h.t, ok)
	return b.State
}

func TestAClosedHeartbeatConnectionFencesAfterTheGrace(t *testing.T) {
	h, epochs := connLossCluster(t, testConfig())
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 1, BrokerEpoch: epochs[1]})
	h.settle()
	h.after(999)
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(1), "within the grace")
	h.beat(2, epochs[2])
	h.beat(3, epochs[3])
	h.after(1)
	require.Equal(t, meta.BrokerFenced, h.brokerState(1), "the grace (1000 ms) is over")
	for p := range int32(6) {
		s := h.state("t", p)
		require.NotEqual(t, int32(1), s.Leader, "partition %d has a live leader", p)
		require.NotEqual(t, meta.NoLeader, s.Leader)
		require.NotContains(t, s.ISR, int32(1))
	}
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(2))
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(3))
}

// A live broker whose connection was reset heartbeats again at once (core/lifecycle):
// that heartbeat gives it back a full session.
func TestAHeartbeatWithinTheGraceKeepsTheBroker(t *testing.T) {
	h, epochs := connLossCluster(t, testConfig())
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 1, BrokerEpoch: epochs[1]})
	h.after(300)
	h.beat(1, epochs[1])
	// Silent again, but within the session its heartbeat started: still unfenced, past
	// the grace and up to the session's end.
	h.keepAlive(8900, epochs, 2, 3)
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(1),
		"a heartbeat after the close restores the full session")
	h.keepAlive(200, epochs, 2, 3)
	require.Equal(t, meta.BrokerFenced, h.brokerState(1), "the session is over")
}

// The old process of a node that registered again since (it was paused past its
// session, then killed) closes its connection: that fences nothing of the new one.
func TestAClosedConnectionOfAnOlderEpochFencesNothing(t *testing.T) {
	h, epochs := connLossCluster(t, testConfig())
	old := epochs[1]
	h.keepAlive(10000, epochs, 2, 3)
	require.Equal(t, meta.BrokerFenced, h.brokerState(1))
	epochs[1] = h.register(1, 2, "")
	h.beat(1, epochs[1])
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(1))
	require.Greater(t, epochs[1], old)
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 1, BrokerEpoch: old})
	h.settle()
	h.keepAlive(4000, epochs, 2, 3)
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(1),
		"a close of epoch %d does not touch the registration of epoch %d", old, epochs[1])
	// Its own connection's close does.
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 1, BrokerEpoch: epochs[1]})
	h.keepAlive(1000, epochs, 2, 3)
	require.Equal(t, meta.BrokerFenced, h.brokerState(1))
}

func TestAZeroGraceFencesOnlyAtTheSessionTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.ConnectionLossGraceMs = 0
	h, epochs := connLossCluster(t, cfg)
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 1, BrokerEpoch: epochs[1]})
	h.keepAlive(8900, epochs, 2, 3)
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(1), "grace 0: the close is ignored")
	h.keepAlive(100, epochs, 2, 3)
	require.Equal(t, meta.BrokerFenced, h.brokerState(1), "the session timeout still fences")
}

// Only the active controller acts on a close, and a newly active one starts every
// broker's liveness afresh: a close delivered before it led shortens nothing.
func TestAnInactiveControllerIgnoresAClose(t *testing.T) {
	h, epochs := connLossCluster(t, testConfig())
	h.c.Step(h.now, LeaderChanged{Leader: 9, Epoch: h.epoch + 1})
	h.epoch++
	require.False(t, h.c.Active())
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 1, BrokerEpoch: epochs[1]})
	h.lead()
	h.keepAlive(8000, epochs, 2, 3)
	require.Equal(t, meta.BrokerUnfenced, h.brokerState(1))
	h.keepAlive(1000, epochs, 2, 3)
	require.Equal(t, meta.BrokerFenced, h.brokerState(1))
}

// A close comes when the broker's session ends sooner anyway: nothing changes.
func TestACloseNeverLengthensASession(t *testing.T) {
	cfg := testConfig()
	cfg.SessionTimeoutMs, cfg.HeartbeatIntervalMs = 3000, 500
	h, epochs := connLossCluster(t, cfg)
	h.keepAlive(2500, epochs, 2, 3)
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 1, BrokerEpoch: epochs[1]})
	h.after(500)
	require.Equal(t, meta.BrokerFenced, h.brokerState(1), "fenced at its session's end")
}

func TestTheGraceIsASetting(t *testing.T) {
	cfg := DefaultConfig()
	require.Equal(t, int64(1000), cfg.ConnectionLossGraceMs)
	ok, err := cfg.Set("sluice.broker.connection.loss.grace.ms", "0")
	require.True(t, ok)
	require.NoError(t, err)
	require.Zero(t, cfg.ConnectionLossGraceMs)
	_, err = cfg.Set("sluice.broker.connection.loss.grace.ms", "-1")
	require.Error(t, err)
	require.Contains(t, SettingNames(), "sluice.broker.connection.loss.grace.ms")
}

// A node killed and started again registers its new process once the grace after its
// connection closed is over, not a whole session after its last heartbeat.
func TestAKilledBrokerRegistersAgainAfterTheGrace(t *testing.T) {
	h, epochs := connLossCluster(t, testConfig())
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 1, BrokerEpoch: epochs[1]})
	h.after(500)
	id := h.ask(RegisterBroker{NodeID: 1, Incarnation: [16]byte{2}, ClusterID: "c",
		Host: "h", Port: 9001})
	h.settle()
	require.Equal(t, codeDuplicateRegistration, h.answer(id).ErrCode(),
		"within the grace the old process may still heartbeat")
	h.keepAlive(600, epochs, 2, 3)
	require.Equal(t, meta.BrokerFenced, h.brokerState(1))
	epoch := h.register(1, 2, "")
	require.Greater(t, epoch, epochs[1])
	// Without a close, a silent broker's new process waits for the session.
	h.keepAlive(100, map[int32]int64{1: epoch, 2: epochs[2], 3: epochs[3]}, 1, 2, 3)
	id = h.ask(RegisterBroker{NodeID: 2, Incarnation: [16]byte{9}, ClusterID: "c",
		Host: "h", Port: 9002})
	h.settle()
	require.Equal(t, codeDuplicateRegistration, h.answer(id).ErrCode())
}

// A fenced broker whose heartbeat connection closes is no longer heard from: its unfence
// may already be in flight, and once committed it must not be elected, nor an ISR
// shrunk to it, on heartbeats from before the close (seed 1089).
func TestAClosedConnectionOfAFencedBrokerMakesItUnheard(t *testing.T) {
	h, _ := connLossCluster(t, testConfig())
	epoch := h.register(4, 1, "")
	require.Equal(t, meta.BrokerFenced, h.brokerState(4))
	h.c.Step(h.now, Request{ID: 999, Msg: Heartbeat{NodeID: 4, BrokerEpoch: epoch,
		MetadataIndex: 0}}) // behind its registration: stays fenced, but heard
	require.True(t, h.c.heardNow(4))
	h.c.Step(h.now, BrokerConnectionClosed{NodeID: 4, BrokerEpoch: epoch})
	require.False(t, h.c.heardNow(4), "its process may be gone")
	h.beat(4, epoch)
	require.True(t, h.c.heardNow(4), "a heartbeat after the close")
}
