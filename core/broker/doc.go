// Package broker is the node actor: it owns the node's metadata image and one replica
// actor per hosted partition, and it answers every Kafka request a client sends.
//
// The broker is a single-threaded state machine. A driver hands it one Input at a time
// with the current time (Step); it answers through its Env (replies, timers, log syncs,
// metadata proposals). Slow work completes later as another Input. The same code runs in
// production (runtime/) and in the simulator (sim/).
//
// One file per Kafka API key holds its handler, opening with the behaviour and versions
// it serves. Framing, version negotiation and ApiVersions itself live in net/, which
// decodes requests into kmsg types before they reach Step. Handlers live here rather
// than in net/ because the simulator drives them without sockets.
package broker
