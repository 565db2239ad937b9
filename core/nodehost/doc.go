// Package nodehost is one cluster node's actors stepped as one: the broker
// (core/broker), the controller (core/controller), active while the node leads the
// metadata quorum, and the broker lifecycle (core/lifecycle), which registers the node
// with the active controller and heartbeats. It is pure: a driver (runtime/cluster.go in a
// process, sim/cluster.go in the simulator) gives it an Env for its effects and steps
// it with the broker's inputs; Host.Step sends each input to the actors it concerns and
// then delivers what the actors sent each other during the step.
//
// Tokens, timer ids and peer request ids of the controller and the lifecycle are kept
// apart from the broker's (small counters) by a high bit each (CtlBit, LcBit), as are
// the broker's requests to a peer's controller (BrBit). A lifecycle or broker RPC to the
// controller on its own node never leaves the node: it is queued and delivered after
// the step that sent it, as its answer is. RPCs to another node's controller travel as
// Kafka's own requests (BrokerRegistration, BrokerHeartbeat, AllocateProducerIds,
// AlterPartition; wire.go) through Env.SendPeer, so they cross whatever network the
// driver has, and arrive at the peer as ordinary broker Requests the peer's host turns
// back into controller messages.
package nodehost
