package sim

import "github.com/sluicemq/sluice/core/mutant"

// The mutant tests run their checks only in the deliberately broken build (build tag
// sluice_mutants, core/mutant); elsewhere they skip or run the real code.
const (
	mutantGroupBuild      = mutant.Build
	mutantValidationBuild = mutant.Build
	mutantReplicaBuild    = mutant.Build
	mutantDiskBuild       = mutant.Build
)

// The setters plant one mutant by its catalogue name (core/mutant.Catalogue) before any
// world runs; it is read-only while they run.
func setGroupMutant(name string)      { mutant.Name = "group/" + name }
func setValidationMutant(name string) { mutant.Name = "batch/" + name }
func setReplicaMutant(name string)    { mutant.Name = "replica/" + name }

// setDiskMutant plants disk/<name>; "" plants none.
func setDiskMutant(name string) {
	mutant.Name = ""
	if name != "" {
		mutant.Name = "disk/" + name
	}
}
