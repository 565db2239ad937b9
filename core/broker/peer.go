package broker

import "go.uber.org/zap"

// peerReply takes the answer to an inter-broker request (Env.SendPeer, rule E7): an
// AlterPartition a leader sent its controller (isr_changes.go). A reply with no waiter
// (its change was dropped meanwhile) is logged and dropped, as a late timer is.
func (b *Broker) peerReply(in PeerReply) {
	if b.alterAnswered(in) {
		return // an ISR change's answer (isr_changes.go)
	}
	b.lg.Debug("inter-broker reply with no waiter", zap.Int32("node", in.Node),
		zap.Uint64("id", in.ID), zap.Error(in.Err))
}
