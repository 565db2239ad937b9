// Package raftmeta is the production adapter of the metadata port (core/broker env.go,
// rules M1–M7) on a quorum: one node's github.com/hashicorp/raft, with its log and
// stable store in the node's pebble store (disk/raftstore), FSM snapshots in a
// directory, and a TCP transport. The broker sees a dense metadata index of its own
// (raft's indexes also count configuration and no-op entries), MetaApplied for every
// committed record in order on every node, answers mapped from raft's errors, and the
// raft term as its leader epoch. docs/quorum.md explains the design; the conformance
// suite (internal/metatest) runs against it with one node and with three.
package raftmeta
