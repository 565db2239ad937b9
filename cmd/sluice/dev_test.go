package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
)

// A dev node has no authentication worth the name: it listens on loopback only.
func TestDevRefusesNonLoopbackAddresses(t *testing.T) {
	for _, args := range [][]string{
		{"dev", "--listen", "0.0.0.0:9092"},
		{"dev", "--tls", "--tls-listen", "192.0.2.1:9093"},
	} {
		code, _, stderr := runCLI(t, "", args...)
		require.Equal(t, 2, code, "%v", args)
		require.Contains(t, stderr, "sluice dev: ")
		require.Contains(t, stderr, "loopback addresses only")
	}
	require.NoError(t, requireLoopback("localhost:9092"))
	require.NoError(t, requireLoopback("[::1]:9092"))
}

// --nodes takes its own flags; the single node's are refused with it, and the
// cluster's without it.
func TestDevClusterFlags(t *testing.T) {
	for args, want := range map[string]string{
		"dev --nodes 3 --tls-dir /tmp/x":     "--tls-dir is for a single dev node",
		"dev --nodes 10":                     "--nodes must be between 1 and 9",
		"dev --nodes 3 --base-port 65500":    "ports 65500..65602 must be valid",
		"dev --data /tmp/x":                  "are for a cluster (--nodes N)",
		"dev --nodes 3 --log-level loud":     "loud",
		"dev --nodes 2 --listen 127.0.0.1:1": "--listen is for a single dev node",
	} {
		code, _, stderr := runCLI(t, "", strings.Fields(args)...)
		require.Equal(t, 2, code, args)
		require.Contains(t, stderr, want, args)
	}
	require.Equal(t, []string{"node", "--id", "2", "--listen", "127.0.0.1:9093",
		"--advertise", "127.0.0.1:9093", "--controller-listen", "127.0.0.1:9193",
		"--voters", "1@127.0.0.1:9192,2@127.0.0.1:9193,3@127.0.0.1:9194",
		"--data", "d/node-2", "--http-listen=", "--log-format", "console",
		"--log-level", "warn"}, devClusterArgs(2, 3, 9092, "d", "warn"))
}

// With --nodes, --tls writes a throw-away CA and a config file that makes the quorum
// transport mutual TLS; a node started with it builds its quorum TLS.
func TestDevClusterQuorumTLSConfig(t *testing.T) {
	dir := t.TempDir()
	path, err := devQuorumTLS(dir)
	require.NoError(t, err)
	cfg := broker.DefaultConfig()
	var ns nodeSettings
	require.NoError(t, loadConfigFile(path, &cfg, &ns))
	ts, err := ns.lst.controllerTLS()
	require.NoError(t, err)
	require.NotNil(t, ts)
	require.Equal(t, filepath.Join(dir, "tls", "ca.pem"), ts.TruststoreLocation)
	srv, err := ts.ServerConfig(zap.NewNop())
	require.NoError(t, err)
	require.NotNil(t, srv.ClientCAs)
}
