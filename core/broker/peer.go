package broker

import "go.uber.org/zap"

// peerReply takes the answer to an inter-broker request (Env.SendPeer, rule E7). No
// part of the broker sends one yet: replication's follower fetchers and the broker's
// registration and heartbeats to the controller are its first users (issue 8). Until
// then a reply has no waiter; it is logged and dropped, as a late timer is.
func (b *Broker) peerReply(in PeerReply) {
	b.lg.Debug("inter-broker reply with no waiter", zap.Int32("node", in.Node),
		zap.Uint64("id", in.ID), zap.Error(in.Err))
}
