//go:build sluice_mutant_record_validation

package sim

import "github.com/sluicemq/sluice/core/batch"

const mutantValidationBuild = true

func setValidationMutant(name string) { batch.Mutant = name }
