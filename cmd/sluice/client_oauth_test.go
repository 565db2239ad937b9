package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// --sasl-mechanism OAUTHBEARER takes its token from --sasl-token-file or
// SLUICE_SASL_TOKEN, and says so when neither holds one.
func TestOAuthBearerFlagsNeedAToken(t *testing.T) {
	t.Setenv(envSASLToken, "")
	c := clientFlags{saslMechanism: "oauthbearer"}
	_, err := c.saslOpts()
	require.ErrorContains(t, err, "--sasl-token-file or "+envSASLToken)

	c.saslTokenFile = filepath.Join(t.TempDir(), "missing")
	_, err = c.saslOpts()
	require.ErrorContains(t, err, "--sasl-token-file")

	require.NoError(t, os.WriteFile(c.saslTokenFile, []byte("a.b.c\n"), 0o600))
	opts, err := c.saslOpts()
	require.NoError(t, err)
	require.Len(t, opts, 1)

	t.Setenv(envSASLToken, "a.b.c")
	opts, err = (&clientFlags{saslMechanism: "OAUTHBEARER"}).saslOpts()
	require.NoError(t, err)
	require.Len(t, opts, 1)
}
