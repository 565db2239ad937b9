//go:build sluice_mutant_replica

package replica

// Mutant selects how this deliberately broken replica misbehaves — never ship it:
//
//	"accept-gap"  an idempotent batch ahead of the next sequence is appended
//	"window-1"    only the last batch per producer is remembered for duplicates
//
// Set it before any replica runs (the simulator's mutant tests do).
var Mutant = "accept-gap"

func mutantOn(name string) bool { return Mutant == name }
