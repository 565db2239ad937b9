package nodehost

import (
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
)

// A broker's heartbeats reach the controller's node as Kafka requests on a connection
// its process opened; when the process dies its kernel closes that connection, and the
// node sees ConnClosed at once. The host remembers which connection last carried each
// broker's heartbeats (BrokerHeartbeat, or its controlled-shutdown form) and, when that
// connection closes, tells the controller (controller.BrokerConnectionClosed), which
// fences the broker unless it heartbeats again within a short grace
// (core/controller/connloss.go). The runtime and the simulator both step connection
// closes through Host.Step, so this is the one place that routes them.
//
// Only the connection that carried a broker's latest heartbeat counts: a broker whose
// client reconnected and heartbeated on a new connection is alive, whenever the old
// one's close comes. The tables hold only open connections and registered brokers.

// beatConn is the broker (and broker epoch) whose heartbeats a connection carried.
type beatConn struct {
	node  int32
	epoch int64
}

type beatConns struct {
	byConn map[uint64]beatConn
	latest map[int32]uint64 // node -> the connection of its latest heartbeat
}

func newBeatConns() beatConns {
	return beatConns{byConn: map[uint64]beatConn{}, latest: map[int32]uint64{}}
}

// noteBeat remembers that conn carried a heartbeat of a registered broker.
func (h *Host) noteBeat(conn uint64, msg controller.Message) {
	var bc beatConn
	switch m := msg.(type) {
	case controller.Heartbeat:
		bc = beatConn{node: m.NodeID, epoch: m.BrokerEpoch}
	case controller.ControlledShutdown:
		bc = beatConn{node: m.NodeID, epoch: m.BrokerEpoch}
	default:
		return
	}
	if _, ok := h.ctl.Image().Broker(bc.node); !ok {
		return // answered BROKER_ID_NOT_REGISTERED; keeps the tables bounded
	}
	if prev, ok := h.beats.latest[bc.node]; ok && prev != conn {
		delete(h.beats.byConn, prev) // its close no longer says anything
	}
	if old, ok := h.beats.byConn[conn]; ok && old.node != bc.node &&
		h.beats.latest[old.node] == conn {
		delete(h.beats.latest, old.node)
	}
	h.beats.byConn[conn] = bc
	h.beats.latest[bc.node] = conn
}

// connClosed tells the controller that the connection of a broker's latest heartbeat
// closed.
func (h *Host) connClosed(now core.Time, conn uint64) {
	bc, ok := h.beats.byConn[conn]
	if !ok {
		return
	}
	delete(h.beats.byConn, conn)
	if h.beats.latest[bc.node] != conn {
		return
	}
	delete(h.beats.latest, bc.node)
	h.ctl.Step(now, controller.BrokerConnectionClosed{NodeID: bc.node,
		BrokerEpoch: bc.epoch})
}
