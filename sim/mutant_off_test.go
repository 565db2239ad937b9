//go:build !sluice_mutant_stale_commit

package sim

// mutantStaleCommitBuild tells the tests whether core/group was built as the
// deliberately broken coordinator (group_mutant_test.go).
const mutantStaleCommitBuild = false
