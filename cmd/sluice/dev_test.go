package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A dev node has no authentication worth the name: it listens on loopback only.
func TestDevRefusesNonLoopbackAddresses(t *testing.T) {
	for _, args := range [][]string{
		{"dev", "--listen", "0.0.0.0:9092"},
		{"dev", "--tls", "--tls-listen", "192.0.2.1:9093"},
	} {
		code, _, stderr := runCLI(t, "", args...)
		require.Equal(t, 2, code, "%v", args)
		require.Contains(t, stderr, "loopback addresses only")
	}
	require.NoError(t, requireLoopback("localhost:9092"))
	require.NoError(t, requireLoopback("[::1]:9092"))
}
