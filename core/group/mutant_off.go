//go:build !sluice_mutant_group_coordinator

package group

// mutantOn is false in every real build. The build tag sluice_mutant_group_coordinator
// makes a deliberately broken coordinator (mutant_on.go) that the simulator must catch
// (sim/group_mutant_test.go). See docs/simulation.md.
func mutantOn(string) bool { return false }
