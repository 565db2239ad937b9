// Package controller is the cluster controller: a pure actor, active on the metadata
// quorum's leader, that decides broker liveness, replica placement, partition leaders
// and ISRs, and acts only by proposing metadata records (core/meta).
//
// Every node runs one and feeds it the committed metadata log (Start, then every
// MetaApplied), so its image is current the moment it becomes active (LeaderChanged
// naming its own node). While active it answers broker RPCs (registration, heartbeats,
// AlterPartition, controlled shutdown, topic creation, producer-id blocks, preferred
// leader elections, partition reassignments) and keeps the cluster in shape on its own
// (fencing brokers whose heartbeats stopped, moving leadership off fenced and
// shutting-down brokers, completing reassignments whose new replicas caught up,
// preferred leader rebalancing on a timer). Inactive, it answers every RPC NOT_CONTROLLER.
//
// Decisions are pure functions of the image, the controller's volatile heartbeat table
// and the request (decide.go, placement.go, register.go, alter_partition.go), each
// tested alone. The actor is level-triggered: after every input it compares the image
// with what the cluster should be and proposes the records that close the gap, at most
// one in flight per broker or partition. Records are conditional (a PartitionChange
// names the next partition epoch, a BrokerChange the registration and a real change of
// state), so a proposal answered "unknown" that commits late next to its re-derived
// replacement changes the image at most once. Pending proposals are typed records
// (Pending), not closures. docs/controller.md describes it; invariants C1-C8 are in
// docs/invariants.md.
package controller
