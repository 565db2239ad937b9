// Package raftstore is hashicorp/raft's log store and stable store on pebble: the raft
// log and the raft node's durable state (current term, last vote) live in the node's
// pebble store (disk.PebbleState) under the "raft/" key prefix. Every write is a synced
// pebble commit, so an entry or a vote is on disk when StoreLogs or Set returns, as
// raft requires before it answers a peer. The metadata quorum adapter
// (runtime/raftmeta) runs raft over it; docs/quorum.md describes both.
package raftstore
