//go:build sluice_mutant_replica

package replica

// Mutant selects how this deliberately broken replica misbehaves — never ship it:
//
//	"accept-gap"  an idempotent batch ahead of the next sequence is appended
//	"window-1"    only the last batch per producer is remembered for duplicates
//	"retention-seconds"   retention.ms read as seconds: segments expire 1000× too early
//	"delete-records-past" DeleteRecords starts the log one record after the offset asked
//
// Set it before any replica runs (the simulator's mutant tests do).
var Mutant = "accept-gap"

func mutantOn(name string) bool { return Mutant == name }
