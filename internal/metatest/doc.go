// Package metatest is the conformance suite of the metadata port (core/broker env.go,
// rules M1–M7; docs/actors.md). One suite, parameterised over an adapter factory, runs
// against every adapter: the production single-node adapter (runtime's metadata writer
// over disk.MetaLog) and the simulator's model (sim/metalog.go); the raft adapter
// will join them. Rapid draws the sequence of proposals, settles, crashes, restarts and
// snapshots; the suite checks what the node is told against what the log holds.
package metatest
