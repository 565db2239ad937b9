package broker

import "go.uber.org/zap"

// peerReply takes the answer to an inter-broker request (Env.SendPeer, rule E7). The
// follower fetcher (fetcher.go) is its user: its request ids come from the node's token
// sequence, so they never collide with another part's. A reply nobody waits for (its
// request's partitions are no longer followed, or a driver delivers one late) is logged
// and dropped, as a late timer is.
func (b *Broker) peerReply(in PeerReply) {
	if b.fetcherReply(in) {
		return
	}
	b.lg.Debug("inter-broker reply with no waiter", zap.Int32("node", in.Node),
		zap.Uint64("id", in.ID), zap.Error(in.Err))
}
