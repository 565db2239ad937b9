// Package mutant is Sluice's mutation-testing switch. In a real build On is a constant
// false and every `if mutantOn("...")` hook in core/ and disk/ compiles away. Under the
// build tag sluice_mutants, On(name) is true for the one mutant whose name is in Name:
// a deliberately planted, plausible bug the simulator and the unit tests must catch.
// Catalogue lists every mutant (name, package, the bug, which unit tests should catch
// it, and the simulator settings that give it a chance to show); `make mutants` runs
// them all (cmd/sluice mutants) and docs/simulation.md keeps the latest table.
//
// core/ stays pure: nothing here reads the environment. cmd/sluice and the test
// binaries (a mutant_env_test.go in each package with hooks) set Name from
// SLUICE_MUTANT before anything runs; Name is read-only afterwards.
package mutant
