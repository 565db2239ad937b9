//go:build sluice_mutant_stale_commit

package group

// mutantStaleCommit: this is a deliberately broken build. Never ship it.
const mutantStaleCommit = true
