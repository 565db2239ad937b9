// Package runtime is the production driver of the broker actor (core/broker): it owns
// the real clock, timers, files, fsyncs and sockets, and feeds the actor one input at a
// time.
//
// A Node is one Sluice server process's worth of machinery:
//
//   - the event loop: one goroutine that owns the *broker.Broker and calls Step for each
//     input (a decoded request, a closed connection, a timer, a finished fsync, a
//     committed metadata record); a connection reader may step its lone request itself
//     when nothing is queued. Every step holds the node's step lock, so the actor never
//     runs concurrently with itself;
//   - the Kafka wire server (package net), whose per-connection goroutines decode
//     requests into the loop's bounded inbox and write replies in request order;
//   - a small pool of sync goroutines running Log.Sync for SyncLog effects, coalescing
//     requests for the same log, and a metadata writer appending proposed records to the
//     metadata log in proposal order;
//   - one time.Timer armed for the earliest of the broker's timers, kept in a min-heap.
//
// The loop never blocks on those helpers: effects are queued without waiting, and
// their completions come back on a channel the loop reads before new requests.
// docs/actors.md ("Production runtime") lists the goroutines and how each ordering rule
// of core/broker/env.go (E1–E5) is kept.
//
// Data layout under the data directory: logs/<topic>-<partition>/ holds each
// partition's segments; state/ is the pebble store with node-local state and the
// metadata log.
package runtime
