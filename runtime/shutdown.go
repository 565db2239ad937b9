package runtime

import (
	"time"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/controller"
)

// controlledShutdown moves the node's leaderships away before Close stops serving
// (Kafka's controlled shutdown): the lifecycle asks the active controller, which marks
// the broker shutting down, elects other ISR members and answers once the node leads
// nothing. Clients meanwhile get NOT_LEADER_OR_FOLLOWER from this node and move to the
// new leaders, so a planned stop costs them a metadata refresh instead of a session
// timeout. It waits at most broker.session.timeout.ms (the controller would fence the
// node by then anyway), and gives up sooner when the metadata quorum has no leader for
// two election timeouts: nobody can commit the moves (the last nodes of a cluster
// stopping together). A node with no other live broker (a cluster of one, the last
// node of a cluster) skips it: its partitions would only be left without a leader
// until it is back.
func (n *Node) controlledShutdown() {
	began := time.Now()
	n.stepMu.Lock()
	if !n.otherBrokerLive() {
		n.stepMu.Unlock()
		n.lg.Info("no controlled shutdown: no other live broker could take leadership")
		return
	}
	now := n.now()
	n.cl.h.Shutdown(now)
	n.replier.Flush(false)
	n.syncer.kick()
	n.stepMu.Unlock()

	timing := n.opts.QuorumTiming
	if timing.Election <= 0 {
		timing.Election = time.Second
	}
	deadline := began.Add(time.Duration(n.opts.Controller.SessionTimeoutMs) * time.Millisecond)
	var leaderless time.Time
	for {
		st, _ := n.Membership()
		if st.ShutDown {
			n.lg.Info("controlled shutdown done", zap.Duration("took", time.Since(began)))
			return
		}
		at := time.Now()
		if leader, _ := n.quorum.Leader(); leader >= 0 {
			leaderless = time.Time{}
		} else if leaderless.IsZero() {
			leaderless = at
		}
		if at.After(deadline) || (!leaderless.IsZero() && at.Sub(leaderless) > 2*timing.Election) {
			n.lg.Warn("controlled shutdown not finished; stopping anyway (the controller "+
				"fences this node after broker.session.timeout.ms)",
				zap.Duration("waited", time.Since(began)))
			return
		}
		time.Sleep(10 * time.Millisecond) // polling, bounded by the deadline above
	}
}

// otherBrokerLive says whether the metadata image has a registered, unfenced broker
// other than this node. The caller holds stepMu.
func (n *Node) otherBrokerLive() bool {
	eligible := controller.Eligible(n.cl.h.Controller().Image())
	for _, b := range n.cl.h.Controller().Image().Brokers() {
		if b.ID != n.opts.Config.NodeID && eligible(b.ID) {
			return true
		}
	}
	return false
}
