package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TLS for the client commands: an SSL or SASL_SSL listener. --tls alone trusts the
// system's roots; --tls-ca trusts a CA file instead (sluice dev --tls writes ca.pem);
// --tls-cert and --tls-key present a client certificate to a listener with
// ssl.client.auth=required. Each has an environment variable, so that a shell set up
// once (as Kafka's client.properties would be) serves every command.
type clientTLS struct {
	enabled            bool
	ca, cert, key, sni string
}

const (
	envTLSCA   = "SLUICE_TLS_CA"
	envTLSCert = "SLUICE_TLS_CERT"
	envTLSKey  = "SLUICE_TLS_KEY"
)

func (c *clientTLS) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.enabled, "tls", false, "connect with TLS (an SSL or SASL_SSL listener); "+
		"implied by --tls-ca and --tls-cert")
	fs.StringVar(&c.ca, "tls-ca", os.Getenv(envTLSCA),
		"PEM `file` of the CA to trust instead of the system's (env "+envTLSCA+")")
	fs.StringVar(&c.cert, "tls-cert", os.Getenv(envTLSCert),
		"PEM `file` of a client certificate, for ssl.client.auth (env "+envTLSCert+")")
	fs.StringVar(&c.key, "tls-key", os.Getenv(envTLSKey),
		"PEM `file` of the client certificate's key (env "+envTLSKey+")")
	fs.StringVar(&c.sni, "tls-server-name", "",
		"name the server certificate must carry (default: the host of each address)")
}

// config is the client's TLS configuration, nil without TLS. Files are read once here,
// so a missing or malformed one is reported before any connection.
func (c *clientTLS) config() (*tls.Config, error) {
	if !c.enabled && c.ca == "" && c.cert == "" && c.key == "" && c.sni == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.sni}
	if c.ca != "" {
		pem, err := os.ReadFile(c.ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", c.ca)
		}
		cfg.RootCAs = pool
	}
	switch {
	case c.cert != "" && c.key != "":
		pair, err := tls.LoadX509KeyPair(c.cert, c.key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case c.cert != "" || c.key != "":
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	return cfg, nil
}

// opts are the client options of the TLS flags: none without TLS.
func (c *clientTLS) opts() ([]kgo.Opt, error) {
	cfg, err := c.config()
	if err != nil || cfg == nil {
		return nil, err
	}
	return []kgo.Opt{kgo.DialTLSConfig(cfg)}, nil
}

// tlsHint words a first contact that failed in the TLS handshake, or nil.
func tlsHint(err error, usingTLS bool) error {
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var firstEOF *kgo.ErrFirstReadEOF
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("the broker's certificate is signed by a CA this client does not "+
			"trust (give it with --tls-ca): %w", err)
	case errors.As(err, &hostname):
		return fmt.Errorf("the broker's certificate does not name this address "+
			"(--tls-server-name sets the name to expect): %w", err)
	case errors.As(err, &invalid):
		return fmt.Errorf("the broker's certificate is not valid (expired?): %w", err)
	case strings.Contains(err.Error(), "tls: certificate required"),
		strings.Contains(err.Error(), "tls: bad certificate"):
		// The server's alert reaches the client as an unexported error type; its text is
		// what Go's crypto/tls promises.
		return fmt.Errorf("the broker refused the TLS handshake (a listener with "+
			"ssl.client.auth=required wants --tls-cert and --tls-key): %w", err)
	case usingTLS && (errors.As(err, &record) || errors.As(err, &firstEOF)):
		return fmt.Errorf("the broker did not answer TLS (is this a PLAINTEXT or "+
			"SASL_PLAINTEXT listener? drop --tls): %w", err)
	case !usingTLS && errors.As(err, &firstEOF):
		return fmt.Errorf("the broker closed the connection at once (an SSL or SASL_SSL "+
			"listener wants --tls or --tls-ca): %w", err)
	}
	return nil
}
