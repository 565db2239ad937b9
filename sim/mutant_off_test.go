//go:build !sluice_mutant_group_coordinator

package sim

// mutantGroupBuild tells the tests whether core/group was built as the deliberately
// broken coordinator (group_mutant_test.go).
const mutantGroupBuild = false

func setGroupMutant(string) {}
