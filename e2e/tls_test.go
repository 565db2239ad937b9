package e2e

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicemq/sluice/internal/devcert"
)

// startProcess runs the sluice binary with args and waits until every address in
// waitFor accepts connections; the process is killed when the test ends.
func startProcess(t *testing.T, args []string, waitFor ...string) *node {
	t.Helper()
	logf, err := os.CreateTemp(t.TempDir(), "node-*.log")
	require.NoError(t, err)
	cmd := exec.Command(sluiceBinary(t), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	n := &node{t: t, addr: waitFor[0], cmd: cmd, log: logf}
	t.Cleanup(n.kill)
	deadline := time.Now().Add(15 * time.Second)
	for _, addr := range waitFor {
		for {
			c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				n.kill()
				t.Fatalf("sluice %v did not listen on %s within 15s; its output:\n%s", args,
					addr, n.logText())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return n
}

// sslArgs are kcat's settings for an SSL listener with the certificates of f; without
// a client certificate when cert is false.
func sslArgs(f devcert.Files, cert bool) []string {
	args := []string{"-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + f.CA}
	if cert {
		args = append(args, "-X", "ssl.certificate.location="+f.ClientCert,
			"-X", "ssl.key.location="+f.ClientKey)
	}
	return args
}

// `sluice dev --tls` as a new user runs it: kcat over SSL with the printed settings
// produces and consumes; without a client certificate (client auth required) it is
// refused; a plaintext kcat on the SSL port fails; the node keeps serving through all
// of it, and at exit the temporary directory is gone.
func TestDevTLSWithKcat(t *testing.T) {
	kcatPath(t)
	plain := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ssl := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	saslSSL := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	dir := filepath.Join(t.TempDir(), "tls")
	n := startProcess(t, []string{"dev", "--tls", "--listen", plain, "--tls-listen", ssl,
		"--sasl-ssl-listen", saslSSL, "--tls-dir", dir, "--client-auth", "required"},
		plain, ssl, saslSSL)
	f := devcert.Files{CA: filepath.Join(dir, "ca.pem"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key")}
	require.Eventually(t, func() bool { return strings.Contains(n.logText(), "kcat -b "+ssl) },
		5*time.Second, 20*time.Millisecond, "the banner names the SSL listener")
	require.Contains(t, n.logText(), "ssl.ca.location="+f.CA)

	var in strings.Builder
	for i := range 200 {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	_, err := kcat(t, 30*time.Second, []byte(in.String()),
		append([]string{"-b", ssl, "-t", "tls", "-P", "-K:"}, sslArgs(f, true)...)...)
	require.NoError(t, err)
	out, err := kcat(t, 30*time.Second, nil, append([]string{"-b", ssl, "-t", "tls", "-C",
		"-e", "-o", "beginning", "-f", "%k:%s\n"}, sslArgs(f, true)...)...)
	require.NoError(t, err)
	got := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		got[sc.Text()] = true
	}
	require.Len(t, got, 200)
	for i := range 200 {
		require.True(t, got[fmt.Sprintf("k%d:v%d", i, i)], "k%d", i)
	}
	meta, err := kcat(t, 20*time.Second, nil, append([]string{"-b", ssl, "-L"},
		sslArgs(f, true)...)...)
	require.NoError(t, err)
	require.Contains(t, meta, "broker 1 at "+ssl, "Metadata on SSL names the SSL listener")

	_, err = kcat(t, 20*time.Second, nil, append([]string{"-b", ssl, "-L", "-m", "3"},
		sslArgs(f, false)...)...)
	require.Error(t, err, "no client certificate: refused")
	_, err = kcat(t, 20*time.Second, nil, "-b", ssl, "-L", "-m", "3")
	require.Error(t, err, "plaintext on the SSL port: refused")

	// The SASL user is SASL_SSL's client: the banner's line, run as printed, needs no
	// client certificate even with --client-auth required.
	sasl := devBannerLine(t, n, `kcat (-b `+regexp.QuoteMeta(saslSSL)+` .*-L)`)
	_, err = kcat(t, 20*time.Second, nil, strings.Fields(sasl[1])...)
	require.NoError(t, err, "SASL_SSL asks for no client certificate")

	meta, err = kcat(t, 20*time.Second, nil, "-b", plain, "-L")
	require.NoError(t, err, "the plaintext listener still serves")
	require.Contains(t, meta, "broker 1 at "+plain)
	require.Contains(t, meta, `topic "tls"`)

	// The banner's sluice line, run as printed, lists the topic kcat made.
	line := regexp.MustCompile(`(?m)^  sluice (topic list --bootstrap \S+ --tls-ca \S+ ` +
		`--tls-cert \S+ --tls-key \S+)$`).FindStringSubmatch(n.logText())
	require.NotNil(t, line, "the banner prints a sluice command line:\n%s", n.logText())
	code, list, _ := runSluice(t, 30*time.Second, nil, strings.Fields(line[1])...)
	require.Equal(t, 0, code, list)
	require.Regexp(t, `(?m)^tls\s+\d+\s+1$`, list)

	require.NoError(t, n.stop())
	require.FileExists(t, f.CA, "--tls-dir is kept")
}

// `sluice node` with a server.properties in Kafka's terms: custom listener names, a
// protocol map, advertised listeners, and the PEM settings.
func TestNodeWithKafkaListenerSettingsAndKcat(t *testing.T) {
	kcatPath(t)
	f, err := devcert.Write(t.TempDir())
	require.NoError(t, err)
	internal := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	external := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	conf := filepath.Join(t.TempDir(), "server.properties")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`listeners=INTERNAL://%s,EXTERNAL://%s
advertised.listeners=INTERNAL://%s,EXTERNAL://localhost:%s
listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SSL
inter.broker.listener.name=INTERNAL
ssl.keystore.type=PEM
ssl.keystore.location=%s
ssl.truststore.location=%s
listener.name.external.ssl.client.auth=required
`, internal, external, internal, strings.Split(external, ":")[1], f.Server, f.CA)), 0o600))
	startProcess(t, []string{"node", "--config", conf, "--data", t.TempDir(),
		"--http-listen="}, internal, external)

	_, err = kcat(t, 30*time.Second, []byte("a:1\nb:2\n"), append([]string{"-b", external,
		"-t", "ext", "-P", "-K:"}, sslArgs(f, true)...)...)
	require.NoError(t, err)
	meta, err := kcat(t, 20*time.Second, nil, append([]string{"-b", external, "-L"},
		sslArgs(f, true)...)...)
	require.NoError(t, err)
	require.Contains(t, meta, "broker 1 at localhost:"+strings.Split(external, ":")[1])
	out, err := kcat(t, 20*time.Second, nil, "-b", internal, "-t", "ext", "-C", "-e",
		"-o", "beginning", "-f", "%k:%s\n")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a:1", "b:2"}, strings.Fields(out))
}

// An expired client certificate on a listener with ssl.client.auth=required, signed by
// the CA the node trusts: franz-go and kcat are refused at the handshake, the node logs
// why, and it keeps serving a client with a valid certificate and its plaintext
// listener.
func TestExpiredClientCertificateOverSSL(t *testing.T) {
	dir := t.TempDir()
	ca, err := devcert.NewCA("test CA", time.Hour)
	require.NoError(t, err)
	write := func(name string, l devcert.Leaf) (certFile, keyFile string) {
		p, err := ca.Issue(l)
		require.NoError(t, err)
		certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
		require.NoError(t, os.WriteFile(certFile, p.CertPEM, 0o600))
		require.NoError(t, os.WriteFile(keyFile, p.KeyPEM, 0o600))
		return certFile, keyFile
	}
	f := devcert.Files{CA: filepath.Join(dir, "ca.pem"), Server: filepath.Join(dir, "server.pem")}
	require.NoError(t, os.WriteFile(f.CA, ca.PEM, 0o600))
	srv, err := ca.Issue(devcert.Leaf{CommonName: "localhost", Server: true})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f.Server, srv.Combined(), 0o600))
	expired := f
	expired.ClientCert, expired.ClientKey = write("expired", devcert.Leaf{CommonName: "old",
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)})
	valid := f
	valid.ClientCert, valid.ClientKey = write("valid", devcert.Leaf{CommonName: "current"})

	plain := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ssl := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	conf := filepath.Join(dir, "server.properties")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`listeners=PLAINTEXT://%s,SSL://%s
inter.broker.listener.name=PLAINTEXT
ssl.keystore.location=%s
ssl.truststore.location=%s
ssl.client.auth=required
`, plain, ssl, f.Server, f.CA)), 0o600))
	n := startProcess(t, []string{"node", "--config", conf, "--data", t.TempDir(),
		"--http-listen="}, plain, ssl)

	franz := func(files devcert.Files) error {
		cert, err := tls.LoadX509KeyPair(files.ClientCert, files.ClientKey)
		require.NoError(t, err)
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
		cl, err := kgo.NewClient(kgo.SeedBrokers(ssl), kgo.RetryTimeout(time.Second),
			kgo.DialTLSConfig(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert},
				MinVersion: tls.VersionTLS12}))
		require.NoError(t, err)
		defer cl.Close()
		return cl.Ping(ctx(t, 5*time.Second))
	}
	require.ErrorContains(t, franz(expired), "expired certificate", "franz-go, expired")
	require.NoError(t, franz(valid), "franz-go with a valid certificate is served")
	if _, err := exec.LookPath("kcat"); err == nil || os.Getenv("CI") != "" {
		_, err := kcat(t, 20*time.Second, nil, append([]string{"-b", ssl, "-L", "-m", "3"},
			sslArgs(expired, true)...)...)
		require.ErrorContains(t, err, "expired", "kcat, expired")
		_, err = kcat(t, 20*time.Second, []byte("a:1\n"), append([]string{"-b", ssl, "-t",
			"valid", "-P", "-K:"}, sslArgs(valid, true)...)...)
		require.NoError(t, err, "kcat with a valid certificate is served")
	}
	// Handshake failures are logged at most once a second (startProcess's probe may
	// have taken this second's line): an expired client may have to try again.
	require.Eventually(t, func() bool {
		return franz(expired) != nil && strings.Contains(n.logText(), "certificate has expired")
	}, 10*time.Second, 250*time.Millisecond, "the node logs why:\n%s", n.logText())
	require.NoError(t, cliTestClient(t, plain, "").Ping(ctx(t, 5*time.Second)),
		"the plaintext listener serves")
	require.NoError(t, n.stop())
}
