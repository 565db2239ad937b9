package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/settings"
)

func TestConfigListShowsTheTable(t *testing.T) {
	code, out, _ := runCLI(t, "", "config", "list")
	require.Equal(t, 0, code)
	require.Regexp(t, regexp.MustCompile(`(?m)^num\.partitions\s+broker\s+int\s+3\s+`+
		`\[1, 2\^31-1\]\s+partitions of an auto-created topic$`), out)
	require.Regexp(t, `(?m)^retention\.ms \(log\.retention\.ms\)\s+topic\s+int\s+604800000`, out)
	code, md, _ := runCLI(t, "", "config", "list", "--markdown")
	require.Equal(t, 0, code)
	require.Equal(t, settings.Markdown(), md)
	code, _, errOut := runCLI(t, "", "config", "show")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unknown action "show"`)
}
