// Package meta holds cluster metadata as records and the image built by applying them.
//
// Metadata changes (topics, partitions, configs, producer-id blocks) are proposed to a
// metadata log port and take effect only when committed, in commit order, on every node.
// In this single-node milestone the port is a local durable log (pebble in production, a
// crash-safe model in the simulator); the Raft quorum of a later milestone implements
// the same port. The image is a pure function of the committed records.
package meta
