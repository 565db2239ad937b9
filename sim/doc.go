// Package sim is Sluice's deterministic simulator: it runs the real broker actor
// (core/broker) on the real storage code (disk/ over the crashable in-memory
// filesystem) inside a seeded, single-threaded world with virtual time, injects faults,
// drives simulated Kafka clients and checks everything they observed.
//
// One seed determines everything. The seed first draws the run's configuration
// (options.go: topics, fault kinds and rates, latencies, workload mix, client settings —
// swarm testing), then every event. All randomness comes from named streams derived
// from the seed (rand.go); events run in (virtual time, sequence number) order
// (queue.go); no goroutine, wall clock or map order can influence a run, and every run
// ends with a hash of its ordered event trace (trace.go) that must be the same each
// time the seed runs on the same commit.
//
// A run has two phases. In the safety phase clients produce, read and administer
// topics, commit offsets, and consumer-group members (member.go) join, rebalance,
// heartbeat, commit and leave, while faults (faults.go) crash and pause the node, slow or fail its disk,
// delay, cut or reset connections and skew its clock. At the heal, every fault stops,
// crashed nodes restart, and the producers must drain; then a final reader reads every
// partition end to end. The history of client operations is then checked by package
// linearizability (porcupine per partition plus Jepsen-style anomaly checks), and the
// liveness conditions (producers drained, consumer groups settled, final read
// completed within the budget) are asserted.
//
// With Options.Coverage a world also counts the code probes of core/ it passes (package
// core/probe; the broker gets a per-world probe.Set, so parallel worlds never share a
// counter) and each (API, error code) pair the broker answers (coverage.go); `sluice
// sim --coverage` adds them up over a sweep and lists what was never reached.
//
// Entry points: Draw(seed) gives a configuration, Config.Set overrides it, New builds
// the world, Run runs it and returns a Result; RunSeeds runs a range over several
// goroutines (one world per goroutine, each single-threaded); WriteArtifacts reruns a
// failure verbosely and writes its event log, porcupine view and timeline.html (a run
// made with Options.Timeline writes the latter with SeedRun.WriteTimeline).
// docs/simulation.md is the user guide.
package sim
