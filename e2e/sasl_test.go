package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sluicemq/sluice/internal/devcert"
)

// saslNode is a node with PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL listeners: PLAIN
// user alice (from the users file) and, once created with `sluice user create`, SCRAM
// user bob.
type saslNode struct {
	*node
	plain, ssl, saslPlain, saslSSL string
	certs                          devcert.Files
}

const (
	alicePassword = "alice-secret"
	bobPassword   = "bob-secret"
)

func startSASLNode(t *testing.T, extraConf string) *saslNode {
	t.Helper()
	f, err := devcert.Write(t.TempDir())
	require.NoError(t, err)
	s := &saslNode{certs: f, plain: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		ssl:       fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		saslPlain: fmt.Sprintf("127.0.0.1:%d", freePort(t)),
		saslSSL:   fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	require.NoError(t, os.WriteFile(users, []byte("# dev users\nalice:"+alicePassword+"\n"),
		0o600))
	conf := filepath.Join(dir, "server.properties")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`listeners=PLAINTEXT://%s,SSL://%s,SASL_PLAINTEXT://%s,SASL_SSL://%s
inter.broker.listener.name=PLAINTEXT
ssl.keystore.location=%s
ssl.truststore.location=%s
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512
sluice.sasl.plain.users.file=%s
%s`, s.plain, s.ssl, s.saslPlain, s.saslSSL, f.Server, f.CA, users, extraConf)), 0o600))
	s.node = startProcess(t, []string{"node", "--config", conf, "--data", t.TempDir(),
		"--http-listen="}, s.plain, s.ssl, s.saslPlain, s.saslSSL)
	s.node.addr = s.plain
	return s
}

// cli runs the sluice binary with env added, bounded.
func cli(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx(t, 30*time.Second), sluiceBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// createBob creates SCRAM user bob with `sluice user create`, itself authenticated as
// alice over SASL_PLAINTEXT with PLAIN.
func (s *saslNode) createBob(t *testing.T) {
	t.Helper()
	out, err := cli(t, []string{"SLUICE_USER_PASSWORD=" + bobPassword,
		"SLUICE_SASL_PASSWORD=" + alicePassword}, "user", "create", "bob",
		"--bootstrap", s.saslPlain, "--sasl-mechanism", "PLAIN", "--sasl-user", "alice")
	require.NoError(t, err, out)
	require.Contains(t, out, "SCRAM-SHA-256, SCRAM-SHA-512 credentials set")
}

func (s *saslNode) tlsConfig(t *testing.T) *tls.Config {
	ca, err := os.ReadFile(s.certs.CA)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// client is a franz-go client of one of the SASL listeners.
func (s *saslNode) client(t *testing.T, overTLS bool, m sasl.Mechanism,
	opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	addr := s.saslPlain
	if overTLS {
		addr = s.saslSSL
		opts = append(opts, kgo.DialTLSConfig(s.tlsConfig(t)))
	}
	opts = append(opts, kgo.SeedBrokers(addr), kgo.SASL(m), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryTimeout(5*time.Second), kgo.MetadataMinAge(250*time.Millisecond))
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// produceConsume produces n records to topic and reads them back, in order.
func produceConsume(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	c := ctx(t, 30*time.Second)
	for i := range n {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i))}
		require.NoError(t, cl.ProduceSync(c, r).FirstErr())
	}
	cl.AddConsumeTopics(topic)
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(c)
		require.NoError(t, c.Err(), "read %d of %d records", len(got), n)
		fs.EachRecord(func(r *kgo.Record) {
			if r.Partition == 0 {
				got = append(got, string(r.Value))
			}
		})
	}
	for i := range n {
		require.Equal(t, fmt.Sprint(i), got[i])
	}
}

// franz-go clients authenticate with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, over
// SASL_PLAINTEXT and SASL_SSL, and produce and consume; the SCRAM user was created
// with `sluice user create` by a client that authenticated itself.
func TestSASLClientsProduceAndConsume(t *testing.T) {
	s := startSASLNode(t, "")
	s.createBob(t)
	alice := plain.Auth{User: "alice", Pass: alicePassword}.AsMechanism()
	bob := scram.Auth{User: "bob", Pass: bobPassword}
	for _, tc := range []struct {
		name    string
		overTLS bool
		m       sasl.Mechanism
	}{
		{"plain-over-sasl-plaintext", false, alice},
		{"scram256-over-sasl-plaintext", false, bob.AsSha256Mechanism()},
		{"scram512-over-sasl-ssl", true, bob.AsSha512Mechanism()},
		{"plain-over-sasl-ssl", true, alice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			produceConsume(t, s.client(t, tc.overTLS, tc.m, kgo.ConsumeResetOffset(
				kgo.NewOffset().AtStart())), "t-"+tc.name, 20)
		})
	}
	out, err := cli(t, []string{"SLUICE_SASL_PASSWORD=" + bobPassword}, "user", "list",
		"--bootstrap", s.saslPlain, "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "bob")
	require.NoError(t, err, out)
	require.Regexp(t, `bob\s+SCRAM-SHA-256\s+8192`, out)
	require.Regexp(t, `bob\s+SCRAM-SHA-512\s+8192`, out)
}

// A wrong password, an unknown user, a mechanism not enabled and a client without SASL
// each fail cleanly, with the right error, and the node keeps serving.
func TestSASLRefusals(t *testing.T) {
	s := startSASLNode(t, "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512\n")
	s.createBob(t)
	for _, tc := range []struct {
		name    string
		overTLS bool
		m       sasl.Mechanism
		want    error
	}{
		{"wrong-password", false, plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(),
			kerr.SaslAuthenticationFailed},
		{"wrong-scram-password", true, scram.Auth{User: "bob",
			Pass: "nope"}.AsSha512Mechanism(), kerr.SaslAuthenticationFailed},
		{"unknown-user", false, scram.Auth{User: "eve", Pass: "x"}.AsSha256Mechanism(),
			kerr.SaslAuthenticationFailed},
		{"mechanism-not-enabled", true, plain.Auth{User: "alice",
			Pass: alicePassword}.AsMechanism(), kerr.UnsupportedSaslMechanism},
	} {
		cl := s.client(t, tc.overTLS, tc.m, kgo.RetryTimeout(time.Second))
		err := cl.Ping(ctx(t, 10*time.Second))
		require.ErrorIs(t, err, tc.want, tc.name)
	}
	// A client that does not authenticate: its Metadata closes the connection.
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.saslPlain), kgo.RetryTimeout(time.Second),
		kgo.RequestRetries(1))
	require.NoError(t, err)
	defer cl.Close()
	require.Error(t, cl.Ping(ctx(t, 10*time.Second)))
	log := s.logText()
	require.Contains(t, log, "SASL authentication failed")
	require.NotContains(t, log, "nope", "credentials are never logged")
	require.NotContains(t, log, alicePassword)

	// The CLI words a refusal; after `sluice user delete` bob cannot authenticate.
	env := []string{"SLUICE_SASL_PASSWORD=" + bobPassword}
	out, err := cli(t, env, "topic", "list", "--bootstrap", s.saslPlain,
		"--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "bob", "--sasl-password", "nope")
	require.Error(t, err)
	require.Contains(t, out, "authentication failed")
	out, err = cli(t, []string{"SLUICE_SASL_PASSWORD=" + alicePassword}, "user", "delete",
		"bob", "--bootstrap", s.saslPlain, "--sasl-mechanism", "PLAIN", "--sasl-user", "alice")
	require.NoError(t, err, out)
	out, err = cli(t, env, "topic", "list", "--bootstrap", s.saslPlain,
		"--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "bob", "--timeout", "3s")
	require.Error(t, err, out)
	require.Contains(t, out, "authentication failed")
	s.requireServes("after-refusals", 15*time.Second)
}

// kcat (librdkafka) with security.protocol=SASL_PLAINTEXT and SCRAM-SHA-512 produces
// and consumes; over SASL_SSL with PLAIN too; without credentials it gets nothing.
func TestSASLWithKcat(t *testing.T) {
	kcatPath(t)
	s := startSASLNode(t, "")
	s.createBob(t)
	scramArgs := []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X",
		"sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=bob", "-X",
		"sasl.password=" + bobPassword}
	_, err := kcat(t, 30*time.Second, []byte("a:1\nb:2\n"), append([]string{"-b",
		s.saslPlain, "-t", "k", "-P", "-K:"}, scramArgs...)...)
	require.NoError(t, err)
	out, err := kcat(t, 30*time.Second, nil, append([]string{"-b", s.saslPlain, "-t", "k",
		"-C", "-e", "-o", "beginning", "-f", "%k:%s\n"}, scramArgs...)...)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a:1", "b:2"}, strings.Fields(out))

	sslArgs := []string{"-X", "security.protocol=SASL_SSL", "-X",
		"ssl.ca.location=" + s.certs.CA, "-X", "sasl.mechanisms=PLAIN", "-X",
		"sasl.username=alice", "-X", "sasl.password=" + alicePassword}
	out, err = kcat(t, 30*time.Second, nil, append([]string{"-b", s.saslSSL, "-t", "k",
		"-C", "-e", "-o", "beginning", "-f", "%k:%s\n"}, sslArgs...)...)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a:1", "b:2"}, strings.Fields(out))

	_, err = kcat(t, 20*time.Second, nil, "-b", s.saslPlain, "-L", "-m", "3")
	require.Error(t, err, "no credentials, no metadata")
	wrong := append([]string{"-b", s.saslPlain, "-L", "-m", "5"}, scramArgs[:6]...)
	_, err = kcat(t, 20*time.Second, nil, append(wrong, "-X", "sasl.password=nope")...)
	require.Error(t, err)
	require.ErrorContains(t, err, "uthenticat")
}

// connections.max.reauth.ms: franz-go is told the session lifetime and re-authenticates
// in place (KIP-368), so a client producing across several lifetimes is never cut off.
func TestSASLSessionLifetimeReauthentication(t *testing.T) {
	s := startSASLNode(t, "connections.max.reauth.ms=1500\n")
	s.createBob(t)
	cl := s.client(t, false, scram.Auth{User: "bob", Pass: bobPassword}.AsSha256Mechanism())
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end := time.Now().Add(5 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		require.NoError(t, cl.ProduceSync(c, &kgo.Record{Topic: "reauth",
			Value: []byte(fmt.Sprint(i))}).FirstErr())
		time.Sleep(100 * time.Millisecond)
	}
	require.NotContains(t, s.logText(), "SASL session expired",
		"the client re-authenticated before every expiry")
}

// `sluice dev --tls --sasl` as the new user tries it: kcat over SASL_SSL with
// SCRAM-SHA-512 and the printed password produces and consumes; without credentials it
// is refused.
func TestDevSASLWithKcat(t *testing.T) {
	kcatPath(t)
	addr := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	plain, ssl, sp, ss := addr(), addr(), addr(), addr()
	dir := filepath.Join(t.TempDir(), "tls")
	n := startProcess(t, []string{"dev", "--tls", "--sasl", "--listen", plain, "--tls-listen",
		ssl, "--sasl-listen", sp, "--sasl-ssl-listen", ss, "--tls-dir", dir}, plain, ssl, sp, ss)
	var password string
	require.Eventually(t, func() bool {
		_, rest, ok := strings.Cut(n.logText(), "SASL: user admin, password ")
		password, _, _ = strings.Cut(rest, " ")
		return ok && password != ""
	}, 10*time.Second, 20*time.Millisecond, "the banner prints the SASL user")
	args := []string{"-b", ss, "-X", "security.protocol=SASL_SSL", "-X",
		"ssl.ca.location=" + filepath.Join(dir, "ca.pem"), "-X", "sasl.mechanisms=SCRAM-SHA-512",
		"-X", "sasl.username=admin", "-X", "sasl.password=" + password}
	kcatProduceConsume(t, "d", args...)
	_, err := kcat(t, 20*time.Second, nil, append(args[:10], "-X", "sasl.password=wrong",
		"-L", "-m", "3")...)
	require.Error(t, err, "a wrong password is refused")

	// The dev node checks ACLs: a deny of the anonymous principal on a topic refuses
	// the PLAINTEXT listener's clients, and not admin, its super user.
	cl, err := kgo.NewClient(kgo.SeedBrokers(plain), kgo.RecordDeliveryTimeout(10*time.Second))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	_, err = adm.CreateTopic(ctx, 1, 1, nil, "secret")
	require.NoError(t, err)
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Deny("User:ANONYMOUS").Topics("secret").
		Operations(kadm.OpAll))
	require.NoError(t, err)
	require.NoError(t, res[0].Err)
	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("x")}).FirstErr()
	require.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
	_, err = kcat(t, 30*time.Second, []byte("a:1\n"), append(args, "-t", "secret", "-P",
		"-K:")...)
	require.NoError(t, err, "the super user is not refused")
	// The banner's OAUTHBEARER command works as printed.
	_, rest, ok := strings.Cut(n.logText(), "--sasl-token-file ")
	require.True(t, ok, "the banner prints an OAUTHBEARER command")
	tokenFile, _, _ := strings.Cut(rest, "\n")
	out, err := cli(t, nil, "topic", "list", "--bootstrap", sp, "--sasl-mechanism",
		"OAUTHBEARER", "--sasl-token-file", strings.TrimSpace(tokenFile))
	require.NoError(t, err, out)
	require.Contains(t, out, "d")
	require.NoError(t, n.stop())
}
