package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every command and action answers -h and --help with its usage and status 0 (bench
// and sim used to exit 2).
func TestHelpExitsZeroEverywhere(t *testing.T) {
	var cmds [][]string
	for name := range commands {
		cmds = append(cmds, []string{name})
	}
	for name := range topicActions {
		cmds = append(cmds, []string{"topic", name})
	}
	for name := range groupActions {
		cmds = append(cmds, []string{"group", name})
	}
	cmds = append(cmds, nil) // sluice -h itself
	require.Greater(t, len(cmds), 15)
	for _, c := range cmds {
		for _, h := range []string{"-h", "--help", "-help"} {
			args := append(append([]string(nil), c...), h)
			code, stdout, stderr := runCLI(t, "", args...)
			require.Equal(t, 0, code, "sluice %v\nstdout: %s\nstderr: %s", args, stdout, stderr)
			require.Contains(t, stdout+stderr, "usage", "sluice %v prints its usage", args)
		}
	}
}
