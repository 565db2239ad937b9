package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/mutant"
)

// Outside the sluice_mutants build the command refuses to run (it would plant nothing
// and report every mutant as survived); a name not in the catalogue is refused.
func TestMutantsNeedsTheMutantBuild(t *testing.T) {
	code, _, stderr := runCLI(t, "", "mutants", "--seeds", "1..1", "--unit=false",
		"--only", "replica/accept-gap")
	if !mutant.Build {
		require.Equal(t, 2, code)
		require.Contains(t, stderr, "sluice_mutants")
		return
	}
	require.Equal(t, 0, code, stderr)
	_, err := selectMutants("replica/no-such-bug")
	require.Error(t, err)
}

func TestMutantsSelectsByName(t *testing.T) {
	list, err := selectMutants("disk/offset-index-next, group/stale-commit")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "group/stale-commit", list[1].Name)
	all, err := selectMutants("")
	require.NoError(t, err)
	require.Len(t, all, len(mutant.Catalogue))
	_, err = selectMutants("replica/no-such-bug")
	require.Error(t, err)
}
