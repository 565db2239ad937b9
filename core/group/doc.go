// Package group is the group coordinator of Kafka's classic consumer-group protocol
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and the table of committed offsets.
//
// It is pure and single-threaded like the rest of core/: time arrives as an argument,
// member ids come from the injected core.Rand, and nothing is written anywhere. The
// broker owns the I/O: it stores committed offsets and group metadata as records of
// the internal topic __consumer_offsets (the codecs, in Kafka's layouts, and the group
// → partition mapping are here), answers clients, and arms one timer per group at
// Group.NextDeadline, calling Tick when it fires.
//
// Membership survives restarts (metadata.go): a group asks for its metadata record
// when a generation's assignment is set (SyncGroup answers wait until it is durable)
// and when it becomes Empty; at load, Restore brings it back Stable with its members.
//
// A group moves through Kafka's states:
//
//	Empty ──join──▶ PreparingRebalance ──all rejoined / timeout──▶ CompletingRebalance
//	  ▲                 ▲        │                                        │
//	  │                 │        └──no members left──▶ Empty     leader's SyncGroup
//	  │                 └──join, leave, expiry, leader rejoin─── Stable ◀──┘
//	                                                      (once its record is durable)
//
// The coordinator never computes assignments: the leader member receives every member's
// metadata for the chosen protocol in its JoinGroup answer and sends the assignments in
// SyncGroup; the coordinator relays each member its own.
//
// Committed offsets of groups without members expire after offsets.retention.minutes
// (KIP-211, expiry.go): the coordinator says which are due, the broker deletes them.
//
// Replies to JoinGroup and SyncGroup may be delayed (they wait for the rebalance); they
// are delivered through callbacks that must not call back into the package. Every
// callback is called exactly once (invariant G1).
package group
