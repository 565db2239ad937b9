//go:build !sluice_mutant_record_validation

package batch

// mutantOn is false in every real build. The build tag sluice_mutant_record_validation
// makes a deliberately broken record validator (mutant_on.go) that the simulator's
// vandal and strict readers must catch (sim/validation_mutant_test.go).
func mutantOn(string) bool { return false }
