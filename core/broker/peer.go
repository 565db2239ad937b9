package broker

import "go.uber.org/zap"

// peerReply takes the answer to an inter-broker request (Env.SendPeer, rule E7). The
// broker's users: an AlterPartition a leader sent its controller (isr_changes.go), the
// follower fetcher (fetcher.go), and a topic creation forwarded to the controller's
// node by a quorum node that is not the controller (controller_port.go), and a client's
// admin change forwarded there in an Envelope (admin_forward.go). Their request
// ids come from the node's token sequence, so they never collide. A reply nobody waits
// for (its change was dropped, its partitions are no longer followed, or a driver
// delivers one late) is logged and dropped, as a late timer is.
func (b *Broker) peerReply(in PeerReply) {
	if b.alterAnswered(in) || b.fetcherReply(in) || b.forwardAnswered(in) ||
		b.adminForwardAnswered(in) {
		return
	}
	b.lg.Debug("inter-broker reply with no waiter", zap.Int32("node", in.Node),
		zap.Uint64("id", in.ID), zap.Error(in.Err))
}
