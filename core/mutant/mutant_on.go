//go:build sluice_mutants

package mutant

// Build is true in the deliberately broken build (tag sluice_mutants). Never ship it.
const Build = true

// On reports whether the named mutant is the one selected by Name.
func On(name string) bool { return Name != "" && Name == name }
