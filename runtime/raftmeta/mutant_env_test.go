package raftmeta

import (
	"os"

	"github.com/sluicemq/sluice/core/mutant"
)

// The unit tests run with the mutant SLUICE_MUTANT names planted (make mutants), in the
// sluice_mutants build; elsewhere this changes nothing.
func init() { mutant.Name = os.Getenv(mutant.EnvVar) }
