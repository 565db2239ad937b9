package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// --log-format picks JSON lines or aligned text; --log-level drops what is below it;
// anything else is refused with the choices.
func TestNodeLoggerFormatsAndLevels(t *testing.T) {
	var buf bytes.Buffer
	lg, err := newNodeLogger(&buf, "json", "info")
	require.NoError(t, err)
	lg.Debug("hidden")
	lg.Info("shown", zap.String("k", "v"))
	var line map[string]any
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line))
	require.Equal(t, "shown", line["msg"])
	require.Equal(t, "v", line["k"])

	buf.Reset()
	lg, err = newNodeLogger(&buf, "console", "warn")
	require.NoError(t, err)
	lg.Info("hidden")
	lg.Warn("careful")
	out := buf.String()
	require.Contains(t, out, "WARN")
	require.Contains(t, out, "careful")
	require.NotContains(t, out, "hidden")
	require.False(t, strings.HasPrefix(out, "{"), "text, not JSON")

	_, err = newNodeLogger(&buf, "xml", "info")
	require.ErrorContains(t, err, "want json or console")
	_, err = newNodeLogger(&buf, "json", "verbose")
	require.ErrorContains(t, err, "want debug, info, warn or error")
	_, err = newNodeLogger(&buf, "json", "fatal")
	require.Error(t, err, "a level that would hide errors")
}
