package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/internal/devcert"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
)

// startTLSTestNode runs a node with a PLAINTEXT and an SSL listener (client
// certificates required), certificates from devcert; it returns both addresses.
func startTLSTestNode(t *testing.T) (string, string, devcert.Files) {
	t.Helper()
	files, err := devcert.Write(t.TempDir())
	require.NoError(t, err)
	ssl := runtime.Listener{Name: "SSL", Addr: "127.0.0.1:0", Protocol: kafkanet.SSL}
	for _, kv := range [][2]string{{"ssl.keystore.location", files.Server},
		{"ssl.truststore.location", files.CA}, {"ssl.client.auth", "required"}} {
		_, err := ssl.TLS.Set(kv[0], kv[1])
		require.NoError(t, err)
	}
	n := runtime.NewNode(runtime.Options{DataDir: t.TempDir(), Config: broker.DefaultConfig(),
		Listeners: []runtime.Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:0",
			Protocol: kafkanet.Plaintext}, ssl}})
	require.NoError(t, n.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	return n.ListenerAddr("PLAINTEXT"), n.ListenerAddr("SSL"), files
}

// The client commands over TLS with a client certificate: create, produce, consume and
// describe work as on PLAINTEXT; each way to get TLS wrong is told in plain words.
func TestCLIOverTLS(t *testing.T) {
	plain, ssl, f := startTLSTestNode(t)
	certs := []string{"--tls-ca", f.CA, "--tls-cert", f.ClientCert, "--tls-key", f.ClientKey}
	over := func(args ...string) []string { return append(args, certs...) }

	cli(t, ssl, 0, "", over("topic", "create", "secure", "--partitions", "2")...)
	_, errOut := cli(t, ssl, 0, "k1:v1\nk2:v2\n", over("produce", "secure")...)
	require.Equal(t, "produced 2 record(s) to topic \"secure\"\n", errOut)
	out, _ := cli(t, ssl, 0, "", over("consume", "secure", "--from-beginning",
		"--exit-at-end", "--print-key")...)
	require.ElementsMatch(t, []string{"k1:v1", "k2:v2"},
		strings.Split(strings.TrimSpace(out), "\n"))
	// The same records, read over PLAINTEXT: one log behind both listeners.
	out, _ = cli(t, plain, 0, "", "consume", "secure", "--from-beginning", "--exit-at-end")
	require.ElementsMatch(t, []string{"v1", "v2"}, strings.Split(strings.TrimSpace(out), "\n"))

	for _, c := range []struct {
		name string
		addr string
		args []string
		code int
		want string
	}{
		{"the system's roots do not know the dev CA", ssl, []string{"--tls"}, 1,
			"does not trust (give it with --tls-ca)"},
		{"no client certificate for ssl.client.auth=required", ssl,
			[]string{"--tls-ca", f.CA}, 1, "wants --tls-cert and --tls-key"},
		{"TLS to a PLAINTEXT listener", plain, certs, 1, "did not answer TLS"},
		{"PLAINTEXT to an SSL listener", ssl, nil, 1, "wants --tls or --tls-ca"},
		{"a certificate without its key", ssl, []string{"--tls-ca", f.CA, "--tls-cert",
			f.ClientCert}, 2, "--tls-cert and --tls-key go together"},
		{"a CA file that is no certificate", ssl, []string{"--tls-ca", f.ClientKey}, 2,
			"no PEM certificate"},
		{"a missing CA file", ssl, []string{"--tls-ca", f.CA + ".missing"}, 2,
			"no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"topic", "list", "--bootstrap", c.addr, "--timeout",
				"10s"}, c.args...)
			code, _, errOut := runCLI(t, "", args...)
			require.Equal(t, c.code, code, errOut)
			require.Contains(t, errOut, c.want)
			require.NotContains(t, errOut, "panic")
		})
	}
}

// sluice bench over TLS, as scripts/bench.sh runs it beside PLAINTEXT: the figures
// carry the label, and the topics go afterwards.
func TestBenchOverTLS(t *testing.T) {
	_, ssl, f := startTLSTestNode(t)
	o := benchOpts{bootstrap: ssl, records: 300, size: 16, partitions: 1,
		maxTime: 20 * time.Second, steps: "acks1_p1,consume", label: "tls_",
		tls: clientTLS{ca: f.CA, cert: f.ClientCert, key: f.ClientKey}}
	var err error
	o.tlsOpts, err = o.tls.opts()
	require.NoError(t, err)
	var out strings.Builder
	require.NoError(t, benchRun(context.Background(), o, &out))
	require.Regexp(t, `FIGURE system=sluice test=produce_tls_acks1_p1 .* acked=300 failed=0`,
		out.String())
	require.Regexp(t, `FIGURE system=sluice test=tls_consume .* records=300`, out.String())
	code, _, errOut := runCLI(t, "", "bench", "--bootstrap", ssl, "--tls-cert", f.ClientCert)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--tls-cert and --tls-key go together")
}

// sluice certs writes what an SSL listener and its clients need (the files
// startTLSTestNode serves with), keys private.
func TestCertsCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	code, out, errOut := runCLI(t, "", "certs", dir)
	require.Equal(t, 0, code, errOut)
	for _, name := range []string{"ca.pem", "server.pem", "client.crt", "client.key"} {
		require.FileExists(t, filepath.Join(dir, name))
		require.Contains(t, out, filepath.Join(dir, name))
	}
	info, err := os.Stat(filepath.Join(dir, "client.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "keys are private")
	code, _, errOut = runCLI(t, "", "certs")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "want one folder")
}
