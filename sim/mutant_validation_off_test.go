//go:build !sluice_mutant_record_validation

package sim

const mutantValidationBuild = false

func setValidationMutant(string) {}
