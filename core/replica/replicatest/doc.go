// Package replicatest provides test doubles for the replica package: MemLog, a pure
// in-memory replica.Log for the broker and replica unit tests.
//
// It lives outside the _test files so that several packages (core/broker, core/replica,
// sim/) can share it; it imports nothing impure and is safe to link into the simulator.
package replicatest
