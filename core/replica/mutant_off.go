//go:build !sluice_mutant_replica

package replica

// mutantOn is false in every real build. The build tag sluice_mutant_replica makes a
// deliberately broken replica (mutant_on.go) that the simulator must catch
// (sim/replica_mutant_test.go). See docs/simulation.md.
func mutantOn(string) bool { return false }
