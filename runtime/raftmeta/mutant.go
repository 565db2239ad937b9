package raftmeta

import "github.com/sluicemq/sluice/core/mutant"

// mutantOn reports whether the planted bug "raftmeta/<name>" is selected (core/mutant,
// build tag sluice_mutants). In every real build it is constant false and the hook
// compiles away.
func mutantOn(name string) bool { return mutant.Build && mutant.On("raftmeta/"+name) }
