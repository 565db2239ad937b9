package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// devBannerLine finds the line of the dev node's banner that re matches (anchored at
// the line's two-space indent) and returns its submatches, waiting for the banner.
func devBannerLine(t *testing.T, n *node, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(`(?m)^  ` + re + `$`)
	var m []string
	require.Eventually(t, func() bool {
		m = rx.FindStringSubmatch(n.logText())
		return m != nil
	}, 15*time.Second, 20*time.Millisecond, "the banner has a line %s:\n%s", re, n.logText())
	return m
}

// The "Done when", as a new user tries it: `sluice dev --tls` alone, then kcat
// with security.protocol=SASL_SSL and sasl.mechanisms=SCRAM-SHA-512, run with the
// banner's settings, produces and consumes; without credentials it is refused; a
// second user, made and denied a topic with the commands the banner prints, is refused
// that topic and served another; the node serves throughout.
func TestDevTLSSASLSSLWithKcat(t *testing.T) {
	kcatPath(t)
	addr := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	plain, ssl, ss := addr(), addr(), addr()
	n := startProcess(t, []string{"dev", "--tls", "--listen", plain, "--tls-listen", ssl,
		"--sasl-ssl-listen", ss}, plain, ssl, ss)
	line := devBannerLine(t, n, `(kcat -b `+regexp.QuoteMeta(ss)+
		` -X security\.protocol=SASL_SSL .*-X sasl\.mechanisms=SCRAM-SHA-512 .*) -L`)
	admin := strings.Fields(line[1])[1:] // kcat's arguments as printed, without -L
	require.NotContains(t, n.logText(), "SASL_PLAINTEXT", "--tls alone: no SASL_PLAINTEXT")

	kcatProduceConsume(t, "d", admin...)

	// Without credentials: librdkafka will not start SASL without them; TLS without
	// SASL on the SASL_SSL port gets no metadata; a wrong password and an unknown user
	// are told the credentials are invalid.
	var noSASL []string
	for i := 0; i < len(admin); i += 2 {
		if !strings.HasPrefix(admin[i+1], "sasl.") {
			noSASL = append(noSASL, admin[i], admin[i+1])
		}
	}
	_, err := kcat(t, 20*time.Second, nil, append(slices.Clip(noSASL), "-X",
		"sasl.mechanisms=SCRAM-SHA-512", "-L", "-m", "3")...)
	require.ErrorContains(t, err, "sasl.username and sasl.password must be set")
	tlsOnly := strings.Replace(strings.Join(noSASL, " "), "protocol=SASL_SSL",
		"protocol=SSL", 1)
	_, err = kcat(t, 20*time.Second, nil, append(strings.Fields(tlsOnly), "-L", "-m", "3")...)
	require.ErrorContains(t, err, "Failed to acquire metadata", "TLS without SASL")
	for _, cred := range [][2]string{{"admin", "wrong"}, {"nobody", "x"}} {
		_, err = kcat(t, 20*time.Second, nil, append(slices.Clip(noSASL), "-X",
			"sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username="+cred[0], "-X",
			"sasl.password="+cred[1], "-L", "-m", "3")...)
		require.ErrorContains(t, err, "invalid credentials", cred[0])
	}
	_, err = kcat(t, 20*time.Second, nil, append(admin, "-L")...)
	require.NoError(t, err, "the node serves after the refusals")

	// A second user, denied topic secret, with the commands the banner prints.
	user := devBannerLine(t, n, `SLUICE_USER_PASSWORD=(\S+) sluice (user create bob .*)`)
	out, err := cli(t, []string{"SLUICE_USER_PASSWORD=" + user[1]}, strings.Fields(user[2])...)
	require.NoError(t, err, out)
	deny := devBannerLine(t, n, `sluice (acl add --deny-principal User:bob .*--topic secret.*)`)
	out, err = cli(t, nil, strings.Fields(deny[1])...)
	require.NoError(t, err, out)
	bob := append(slices.Clip(noSASL), "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=bob",
		"-X", "sasl.password="+user[1])
	_, err = kcat(t, 30*time.Second, []byte("k:v\n"), append(bob, "-t", "secret", "-P",
		"-K:")...)
	require.ErrorContains(t, err, "Topic authorization failed", "bob may not write secret")
	_, err = kcat(t, 30*time.Second, nil, append(bob, "-t", "d", "-C", "-e", "-o",
		"beginning")...)
	require.NoError(t, err, "bob may read topic d, which no ACL covers")
	_, err = kcat(t, 30*time.Second, []byte("k:v\n"), append(bob, "-t", "open", "-P",
		"-K:")...)
	require.NoError(t, err, "bob may write topic open, which no ACL covers")
	_, err = kcat(t, 30*time.Second, []byte("k:v\n"), append(admin, "-t", "secret", "-P",
		"-K:")...)
	require.NoError(t, err, "admin, the super user, may write secret")
	_, err = kcat(t, 30*time.Second, nil, append(bob, "-t", "secret", "-C", "-e", "-o",
		"beginning")...)
	require.ErrorContains(t, err, "Topic authorization failed", "bob may not read secret")

	require.NotContains(t, n.logText()[strings.Index(n.logText(), "OAUTHBEARER ("):],
		user[1], "no password is logged")
	require.NoError(t, n.stop())
}
