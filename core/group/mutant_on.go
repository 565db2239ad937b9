//go:build sluice_mutant_group_coordinator

package group

// Mutant selects how this deliberately broken coordinator misbehaves — never ship it:
//
//	"stale-commit"        OffsetCommit from a known member of an older generation accepted
//	"no-generation-bump"  rebalances after the first keep generation 1
//	"sync-before-durable" SyncGroup answered before the generation's record is durable
//
// Set it before any coordinator runs (the simulator's mutant tests do).
var Mutant = "stale-commit"

func mutantOn(name string) bool { return Mutant == name }
