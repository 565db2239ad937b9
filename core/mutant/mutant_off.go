//go:build !sluice_mutants

package mutant

// Build is false in every real build: On is constant false and the hooks vanish.
const Build = false

// On reports whether the named mutant is planted: never, outside the mutant build.
func On(string) bool { return false }
