package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeCommands returns the sluice command lines of README.md's "Trying it by hand"
// block, in order.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "## Trying it by hand")
	require.True(t, ok)
	_, rest, ok = strings.Cut(rest, "```\n")
	require.True(t, ok)
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	return lines
}

// Issue 6 item 7: the README's group consume waited forever on a fresh group. Run the
// README's sequence as written against a node; every command must exit 0 in time.
func TestReadmeTryingItByHand(t *testing.T) {
	addr := startTestNode(t)
	lines := readmeCommands(t)
	require.GreaterOrEqual(t, len(lines), 5)
	for _, line := range lines {
		for _, part := range strings.Split(line, " && ") {
			stdin := ""
			if strings.HasPrefix(part, "printf '") {
				text, cmd, ok := strings.Cut(strings.TrimPrefix(part, "printf '"), "' | ")
				require.True(t, ok, part)
				stdin, part = strings.ReplaceAll(text, `\n`, "\n"), cmd
			}
			args, ok := strings.CutPrefix(part, "go run ./cmd/sluice ")
			require.True(t, ok, "not a sluice command: %s", part)
			argv := append(strings.Fields(args), "--bootstrap", addr, "--timeout", "5s")
			code, stdout, stderr := runBounded(t, 30*time.Second, stdin, argv)
			require.Equal(t, 0, code, "%s\nstdout: %s\nstderr: %s", part, stdout, stderr)
			if strings.Contains(part, "--group billing") {
				require.Len(t, strings.Split(strings.TrimSpace(stdout), "\n"), 2,
					"--max 2 prints two records")
			}
		}
	}
}

// runBounded runs the CLI in-process and fails the test when it does not return
// within bound.
func runBounded(t *testing.T, bound time.Duration, stdin string, args []string) (int,
	string, string) {
	t.Helper()
	type res struct {
		code           int
		stdout, stderr string
	}
	done := make(chan res, 1)
	go func() {
		c, o, e := runCLI(t, stdin, args...)
		done <- res{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(bound):
		t.Fatalf("sluice %s did not exit within %s", strings.Join(args, " "), bound)
		return 0, "", ""
	}
}
