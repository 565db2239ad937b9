// Package lifecycle is a broker's side of its membership in the cluster: a pure actor
// that registers the node with the active controller and keeps it alive with
// heartbeats (Kafka's BrokerLifecycleManager).
//
// It knows which node leads the metadata quorum (LeaderChanged) and how far its node
// has applied the metadata log (Applied); it sends RegisterBroker until the controller
// answers with a broker epoch, then a Heartbeat every broker.heartbeat.interval.ms
// (more often while the controller keeps it fenced, so a starting node is unfenced
// soon after it caught up). A heartbeat refused because the registration is gone or
// stale registers again; NOT_CONTROLLER waits for the next leader or retries after a
// backoff. A controller that says the data directory belongs to another cluster
// (INCONSISTENT_CLUSTER_ID) ends the node through Env.Fatal: it must not serve.
//
// Shutdown begins a controlled shutdown: instead of heartbeats the lifecycle sends
// ControlledShutdown (on the wire, a BrokerHeartbeat with WantShutdown, as in KRaft)
// until the controller answers that the node leads nothing; Status.ShutDown then lets
// the node exit.
//
// At most one RPC is in flight, and exactly one Reply answers each Send (the driver's
// rule E7). Status reports the registration for /readyz and tests. docs/controller.md
// ("Broker lifecycle") describes how a node wires it.
package lifecycle
