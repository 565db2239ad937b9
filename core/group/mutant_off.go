//go:build !sluice_mutant_stale_commit

package group

// mutantStaleCommit is false in every real build. The build tag
// sluice_mutant_stale_commit turns it on to make a deliberately broken coordinator that
// accepts an OffsetCommit from a known member of an older generation (a zombie that
// missed a rebalance); the simulator must catch that build
// (sim/group_mutant_test.go). See docs/simulation.md.
const mutantStaleCommit = false
