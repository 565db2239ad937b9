package net

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// TLSSettings are the ssl.* settings of a TLS listener, under Kafka's names. Kafka's
// keystores are JKS by default; Sluice reads Kafka's PEM form only
// (ssl.keystore.type=PEM): a PEM file holding the certificate chain and the private key
// (ssl.keystore.location), or both inline (ssl.keystore.certificate.chain and
// ssl.keystore.key). docs/security.md has examples.
type TLSSettings struct {
	KeystoreType          string // ssl.keystore.type: PEM
	KeystoreLocation      string // ssl.keystore.location: PEM file, chain and key
	KeystoreChain         string // ssl.keystore.certificate.chain: inline PEM
	KeystoreKey           string // ssl.keystore.key: inline PEM (unencrypted)
	TruststoreType        string // ssl.truststore.type: PEM
	TruststoreLocation    string // ssl.truststore.location: PEM CA bundle
	TruststoreCerts       string // ssl.truststore.certificates: inline PEM CAs
	ClientAuth            string // ssl.client.auth: none, requested, required
	EnabledProtocols      string // ssl.enabled.protocols: TLSv1.2,TLSv1.3
	EndpointIdentAlgo     string // ssl.endpoint.identification.algorithm: https or ""
	endpointIdentSet      bool
	ReloadCheck           time.Duration // sluice.ssl.keystore.reload.check.ms
	reloadCheckSet        bool
	PrincipalMappingRules string // ssl.principal.mapping.rules: DEFAULT only
}

// Default values, Kafka's where it has the setting.
const (
	defaultReloadCheck = 10 * time.Second
)

var tlsSettingNames = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain",
	"ssl.keystore.key", "ssl.key.password", "ssl.keystore.password", "ssl.truststore.type",
	"ssl.truststore.location", "ssl.truststore.certificates", "ssl.truststore.password",
	"ssl.client.auth", "ssl.enabled.protocols", "ssl.endpoint.identification.algorithm",
	"ssl.principal.mapping.rules", "sluice.ssl.keystore.reload.check.ms",
}

// TLSSettingNames lists the config-file keys TLSSettings.Set accepts. Each may also be
// given for one listener as listener.name.<name>.<key>.
func TLSSettingNames() []string { return append([]string(nil), tlsSettingNames...) }

// Set applies one ssl.* setting; known is false when key is not one.
func (t *TLSSettings) Set(key, value string) (known bool, err error) {
	value = strings.TrimSpace(value)
	switch key {
	case "ssl.keystore.type", "ssl.truststore.type":
		if !strings.EqualFold(value, "PEM") {
			return true, fmt.Errorf("%s: only PEM is supported (Kafka's JKS and PKCS12 "+
				"keystores are not), got %q", key, value)
		}
		if key == "ssl.keystore.type" {
			t.KeystoreType = "PEM"
		} else {
			t.TruststoreType = "PEM"
		}
	case "ssl.keystore.location":
		t.KeystoreLocation = value
	case "ssl.keystore.certificate.chain":
		t.KeystoreChain = inlinePEM(value)
	case "ssl.keystore.key":
		t.KeystoreKey = inlinePEM(value)
	case "ssl.key.password", "ssl.keystore.password", "ssl.truststore.password":
		if value != "" {
			return true, fmt.Errorf("%s: encrypted PEM keys and password-protected stores "+
				"are not supported; give an unencrypted PEM key (file mode 0600)", key)
		}
	case "ssl.truststore.location":
		t.TruststoreLocation = value
	case "ssl.truststore.certificates":
		t.TruststoreCerts = inlinePEM(value)
	case "ssl.client.auth":
		if _, err := clientAuthOf(value); err != nil {
			return true, err
		}
		t.ClientAuth = value
	case "ssl.enabled.protocols":
		if _, _, err := protocolRange(value); err != nil {
			return true, err
		}
		t.EnabledProtocols = value
	case "ssl.endpoint.identification.algorithm":
		if value != "" && !strings.EqualFold(value, "https") {
			return true, fmt.Errorf("%s: want https or empty, got %q", key, value)
		}
		t.EndpointIdentAlgo, t.endpointIdentSet = strings.ToLower(value), true
	case "ssl.principal.mapping.rules":
		if value != "DEFAULT" {
			return true, fmt.Errorf("%s: only DEFAULT is supported (the principal is the "+
				"certificate's subject), got %q", key, value)
		}
		t.PrincipalMappingRules = value
	case "sluice.ssl.keystore.reload.check.ms":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return true, fmt.Errorf("%s: want milliseconds >= 0 (0: never), got %q", key, value)
		}
		t.ReloadCheck, t.reloadCheckSet = time.Duration(n)*time.Millisecond, true
	default:
		return false, nil
	}
	return true, nil
}

func clientAuthOf(value string) (tls.ClientAuthType, error) {
	switch value {
	case "", "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("ssl.client.auth: want none, requested or required, got %q", value)
}

// protocolRange reads ssl.enabled.protocols into the lowest and highest TLS version.
func protocolRange(value string) (lo, hi uint16, err error) {
	if strings.TrimSpace(value) == "" {
		value = "TLSv1.2,TLSv1.3"
	}
	for _, p := range strings.Split(value, ",") {
		var v uint16
		switch strings.TrimSpace(p) {
		case "TLSv1.2":
			v = tls.VersionTLS12
		case "TLSv1.3":
			v = tls.VersionTLS13
		case "TLSv1", "TLSv1.1", "SSLv3":
			return 0, 0, fmt.Errorf("ssl.enabled.protocols: %s is not supported, TLSv1.2 is "+
				"the oldest version served", strings.TrimSpace(p))
		default:
			return 0, 0, fmt.Errorf("ssl.enabled.protocols: want TLSv1.2 and/or TLSv1.3, "+
				"got %q", p)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return lo, hi, nil
}

// hasKeystore says whether a key pair is configured.
func (t *TLSSettings) hasKeystore() bool {
	return t.KeystoreLocation != "" || t.KeystoreChain != "" || t.KeystoreKey != ""
}

// ServerConfig builds the tls.Config of a TLS listener. A keystore given as a file is
// re-read when the file changes (checked at most every
// sluice.ssl.keystore.reload.check.ms, on a new connection's handshake): a file that
// does not load keeps the previous certificate, with an error in the log.
func (t *TLSSettings) ServerConfig(lg *zap.Logger) (*tls.Config, error) {
	lo, hi, err := protocolRange(t.EnabledProtocols)
	if err != nil {
		return nil, err
	}
	auth, err := clientAuthOf(t.ClientAuth)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: lo, MaxVersion: hi, ClientAuth: auth}
	if err := t.setCertificate(cfg, lg); err != nil {
		return nil, err
	}
	pool, err := t.trustPool()
	if err != nil {
		return nil, err
	}
	if auth != tls.NoClientCert && pool == nil {
		return nil, fmt.Errorf("ssl.client.auth=%s needs ssl.truststore.location (the CAs "+
			"that sign client certificates)", t.ClientAuth)
	}
	cfg.ClientCAs = pool
	return cfg, nil
}

// ClientConfig builds the tls.Config a node uses to reach its peers on a TLS
// listener: the truststore verifies them (the system's CAs without one), the keystore,
// when set, is the client certificate, and the host name is checked unless
// ssl.endpoint.identification.algorithm is empty.
func (t *TLSSettings) ClientConfig(lg *zap.Logger) (*tls.Config, error) {
	lo, hi, err := protocolRange(t.EnabledProtocols)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: lo, MaxVersion: hi}
	if t.hasKeystore() {
		srv := &tls.Config{}
		if err := t.setCertificate(srv, lg); err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return srv.GetCertificate(nil)
		}
	}
	if cfg.RootCAs, err = t.trustPool(); err != nil {
		return nil, err
	}
	if t.endpointIdentSet && t.EndpointIdentAlgo == "" {
		cfg.InsecureSkipVerify = true // Kafka's empty algorithm: no host name check
		roots := cfg.RootCAs
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChainOnly(raw, roots)
		}
	}
	return cfg, nil
}

// verifyChainOnly verifies a server's chain against roots without its host name.
func verifyChainOnly(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("no server certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return err
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

func (t *TLSSettings) setCertificate(cfg *tls.Config, lg *zap.Logger) error {
	switch {
	case t.KeystoreLocation != "" && (t.KeystoreChain != "" || t.KeystoreKey != ""):
		return errors.New("give either ssl.keystore.location or ssl.keystore.certificate." +
			"chain and ssl.keystore.key, not both")
	case t.KeystoreLocation != "":
		every := defaultReloadCheck
		if t.reloadCheckSet {
			every = t.ReloadCheck
		}
		r, err := newCertReloader(t.KeystoreLocation, every, lg)
		if err != nil {
			return err
		}
		cfg.GetCertificate = r.get
	case t.KeystoreChain != "" && t.KeystoreKey != "":
		cert, err := tls.X509KeyPair([]byte(t.KeystoreChain), []byte(t.KeystoreKey))
		if err != nil {
			return fmt.Errorf("ssl.keystore.certificate.chain and ssl.keystore.key: %w", err)
		}
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return &cert, nil
		}
	default:
		return errors.New("an SSL listener needs its certificate and key: " +
			"ssl.keystore.location (a PEM file holding both), or " +
			"ssl.keystore.certificate.chain and ssl.keystore.key")
	}
	return nil
}

func (t *TLSSettings) trustPool() (*x509.CertPool, error) {
	var pemData []byte
	var what string
	switch {
	case t.TruststoreLocation != "" && t.TruststoreCerts != "":
		return nil, errors.New("give either ssl.truststore.location or " +
			"ssl.truststore.certificates, not both")
	case t.TruststoreLocation != "":
		b, err := os.ReadFile(t.TruststoreLocation)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		pemData, what = b, t.TruststoreLocation
	case t.TruststoreCerts != "":
		pemData, what = []byte(t.TruststoreCerts), "ssl.truststore.certificates"
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("truststore %s holds no PEM certificate", what)
	}
	return pool, nil
}

// certReloader serves a key pair read from a PEM file, re-read when the file's content
// changes, looked at no more often than every. The content is compared, not the
// modification time and size: a renewed certificate often has the size of the old one,
// and two writes within the kernel's timestamp granularity (a few ms) share a
// modification time (TestKeystoreReloadWithoutRestart failed so under load).
type certReloader struct {
	path  string
	every time.Duration
	lg    *zap.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	raw     []byte // the file's content when last read (loaded or not)
	checked time.Time
}

// maxKeystoreBytes bounds a keystore file read at every check: a PEM chain and key
// take a few KiB.
const maxKeystoreBytes = 1 << 20

func newCertReloader(path string, every time.Duration, lg *zap.Logger) (*certReloader, error) {
	r := &certReloader{path: path, every: every, lg: lg}
	b, err := readKeystore(path)
	if err != nil {
		return nil, err
	}
	cert, err := parseKeyPair(path, b)
	if err != nil {
		return nil, err
	}
	r.cert, r.raw, r.checked = cert, b, time.Now()
	warnExpiry(lg, path, cert)
	return r, nil
}

// readKeystore reads the keystore file, refusing one above maxKeystoreBytes.
func readKeystore(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeystoreBytes+1))
	if err != nil {
		return nil, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	if len(b) > maxKeystoreBytes {
		return nil, fmt.Errorf("ssl.keystore.location %s: larger than %d bytes", path,
			maxKeystoreBytes)
	}
	return b, nil
}

func parseKeyPair(path string, b []byte) (*tls.Certificate, error) {
	if bytes.Contains(b, []byte("ENCRYPTED")) {
		return nil, fmt.Errorf("ssl.keystore.location %s: encrypted PEM keys are not "+
			"supported", path)
	}
	cert, err := tls.X509KeyPair(b, b)
	if err != nil {
		return nil, fmt.Errorf("ssl.keystore.location %s (want a PEM file holding the "+
			"certificate chain and its private key): %w", path, err)
	}
	return &cert, nil
}

func warnExpiry(lg *zap.Logger, path string, cert *tls.Certificate) {
	if cert.Leaf == nil {
		return
	}
	if now := time.Now(); now.After(cert.Leaf.NotAfter) || now.Before(cert.Leaf.NotBefore) {
		lg.Warn("the listener's certificate is not valid now: clients will refuse it",
			zap.String("file", path), zap.Time("not_before", cert.Leaf.NotBefore),
			zap.Time("not_after", cert.Leaf.NotAfter))
	}
}

// get is tls.Config.GetCertificate.
func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.every > 0 {
		if now := time.Now(); now.Sub(r.checked) >= r.every {
			r.checked = now
			r.reloadIfChanged()
		}
	}
	return r.cert, nil
}

// reloadIfChanged re-reads the file and loads it when its content changed since it was
// last read; a file that does not load is logged and the certificate in use stays.
func (r *certReloader) reloadIfChanged() {
	b, err := readKeystore(r.path)
	if err != nil {
		r.lg.Error("cannot check the listener's certificate file; keeping the "+
			"certificate in use", zap.String("file", r.path), zap.Error(err))
		return
	}
	if bytes.Equal(b, r.raw) {
		return
	}
	// Remembered before loading: a bad file is logged once, not at every handshake;
	// changing it again tries again.
	r.raw = b
	cert, err := parseKeyPair(r.path, b)
	if err != nil {
		r.lg.Error("cannot reload the listener's certificate; keeping the certificate "+
			"in use", zap.String("file", r.path), zap.Error(err))
		return
	}
	r.cert = cert
	fields := []zap.Field{zap.String("file", r.path)}
	if cert.Leaf != nil {
		fields = append(fields, zap.String("subject", cert.Leaf.Subject.String()),
			zap.Time("not_after", cert.Leaf.NotAfter))
	}
	r.lg.Info("reloaded the listener's certificate", fields...)
	warnExpiry(r.lg, r.path, cert)
}

// pemMarker matches a PEM block's BEGIN or END line.
var pemMarker = regexp.MustCompile(`-----(BEGIN|END) [A-Z0-9 ]+-----`)

// inlinePEM makes PEM given on one config-file line readable: "\n" sequences become
// newlines, and a block written on one line (Kafka's docs join the lines with
// continuations) gets its marker lines back and its base64 joined.
func inlinePEM(value string) string {
	value = strings.ReplaceAll(value, `\n`, "\n")
	if strings.Contains(value, "\n") {
		return value
	}
	var b strings.Builder
	rest := value
	for {
		loc := pemMarker.FindStringIndex(rest)
		if loc == nil {
			b.WriteString(strings.Join(strings.Fields(rest), ""))
			break
		}
		if body := strings.Join(strings.Fields(rest[:loc[0]]), ""); body != "" {
			b.WriteString(body + "\n")
		}
		b.WriteString(rest[loc[0]:loc[1]] + "\n")
		rest = rest[loc[1]:]
	}
	return b.String()
}
