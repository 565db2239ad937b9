//go:build !sluice_mutant_replica

package sim

// mutantReplicaBuild tells the tests whether core/replica was built as the deliberately
// broken replica (replica_mutant_test.go).
const mutantReplicaBuild = false

func setReplicaMutant(string) {}
