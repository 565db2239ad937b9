//go:build sluice_mutant_record_validation

package batch

// Mutant selects how this deliberately broken validator misbehaves — never ship it.
// Each is a slip a competent engineer could make writing a record walk:
//
//	"trailing-ok"     bytes after the last counted record are not looked at
//	"delta-unchecked" record offset deltas are parsed but never compared
//	"count-trusted"   records that end early end the walk without an error
//
// Set it before any broker runs (the simulator's mutant tests do).
var Mutant = "trailing-ok"

func mutantOn(name string) bool { return Mutant == name }
