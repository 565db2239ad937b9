//go:build sluice_mutant_stale_commit

package sim

const mutantStaleCommitBuild = true
