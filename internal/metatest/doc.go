// Package metatest is the conformance suite of the metadata port (core/broker env.go,
// rules M1–M7; docs/actors.md). One suite, parameterised over an adapter factory, runs
// against every adapter: the production single-node adapter (runtime's metadata writer
// over disk.MetaLog), the simulator's model (sim/metalog.go) and the raft adapter
// (runtime/raftmeta). Rapid draws the sequence of proposals, settles, crashes, restarts
// and snapshots; the suite checks what the node is told against what the log holds.
// Run sees one node; RunCluster sees every node of a quorum and also checks that they
// agree (the same record at the same index everywhere) and that a healed quorum
// commits again.
package metatest
