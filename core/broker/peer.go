package broker

import "go.uber.org/zap"

// peerReply takes the answer to an inter-broker request (Env.SendPeer, rule E7). The
// broker sends one today: a topic creation forwarded to the controller's node by a
// quorum node that is not the controller (controller_port.go). Any other reply has no
// waiter; it is logged and dropped, as a late timer is.
func (b *Broker) peerReply(in PeerReply) {
	if b.forwardAnswered(in) { // a creation forwarded to the controller's node
		return
	}
	b.lg.Debug("inter-broker reply with no waiter", zap.Int32("node", in.Node),
		zap.Uint64("id", in.ID), zap.Error(in.Err))
}
