package mutant

// Name selects the planted mutant ("package/bug", one of Catalogue) in the sluice_mutants
// build; empty plants none. Set it before any broker, replica or log runs; it is only
// read afterwards. Outside the mutant build it is ignored.
var Name string

// EnvVar is the environment variable cmd/sluice and the test binaries read into Name.
const EnvVar = "SLUICE_MUTANT"
