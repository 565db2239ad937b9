// Package linearizability checks histories of Kafka client operations against what a
// partitioned log promises. The simulator records every operation its clients invoke
// (with virtual invoke and return times; unknown outcomes stay unknown) and hands the
// History to Check, which runs two checkers:
//
//   - a porcupine model per partition (model.go): the partition's committed length is a
//     linearizable register that only grows; an acknowledged acks=all append is
//     linearized when the length equals its returned offset; every read or ListOffsets
//     observes the length as its high-water mark. Appends whose outcome is unknown
//     (timeouts, resets, acks=0) may or may not take effect, at any time after their
//     invocation (porcupine's pending operations with return time = infinity).
//   - a Jepsen-style anomaly checker (anomalies.go): lost acknowledged writes, two
//     values at one offset, duplicates where idempotence promises none, out-of-order
//     records for one idempotent producer, reads past the high-water mark, skipped or
//     backwards reads, and values nobody wrote; sequence errors an idempotent producer
//     can disprove and sequence gaps in what became visible (sequences.go); log start
//     offsets past what retention and DeleteRecords allow and batches served below a
//     known log start (retention.go).
//
// A porcupine search that runs out of its budget is retried once with a longer one and
// fails the check if that runs out too (budget.go).
//
// Committed offsets are registers checked with porcupine (register.go); what consumer
// group members were answered is checked for split brain, generations going back and
// accepted commits from stale generations (groups.go).
//
// Record contents are checked by the anomaly checker (every value is unique per write,
// so offset → value must be a function); porcupine then only has to check timing, which
// keeps its search over integer states small.
//
// The package is shared by the simulator and by real-cluster fault tests: it knows
// nothing about how the history was produced.
package linearizability
