// Package replica is the partition replica actor: it owns one partition's log and
// decides what gets appended where, when data becomes visible (the high-water mark),
// when it must be made durable, which idempotent-producer batches are duplicates or out
// of order, and which segments retention removes.
//
// In this single-node milestone the broker actor steps its replicas directly on its own
// thread (a method call is the message boundary). The replica never blocks: the only
// slow operation, making the log durable, is requested by the broker through
// Env.SyncLog and reported back through SyncCompleted.
package replica
