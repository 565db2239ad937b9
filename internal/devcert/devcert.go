package devcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that signs leaves.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	PEM  []byte // the CA certificate, for truststores
}

// NewCA makes a self-signed CA valid from an hour ago for validFor.
func NewCA(name string, validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Sluice dev"}},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validFor),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key, PEM: pemBlock("CERTIFICATE", der)}, nil
}

// Leaf describes a certificate to issue.
type Leaf struct {
	CommonName   string
	Organization string
	// Server makes a server certificate for 127.0.0.1, ::1 and localhost (usable as a
	// client certificate too, as a node's is towards its peers); otherwise a client
	// certificate.
	Server    bool
	NotBefore time.Time // zero: an hour ago
	NotAfter  time.Time // zero: a year from now
}

// Pair is an issued certificate and its key, in PEM.
type Pair struct {
	CertPEM, KeyPEM []byte
}

// Combined is the certificate followed by its key: the PEM file ssl.keystore.location
// takes.
func (p Pair) Combined() []byte { return append(append([]byte(nil), p.CertPEM...), p.KeyPEM...) }

// Issue signs a new leaf certificate.
func (ca *CA) Issue(l Leaf) (Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	if l.NotBefore.IsZero() {
		l.NotBefore = time.Now().Add(-time.Hour)
	}
	if l.NotAfter.IsZero() {
		l.NotAfter = time.Now().Add(365 * 24 * time.Hour)
	}
	sub := pkix.Name{CommonName: l.CommonName}
	if l.Organization != "" {
		sub.Organization = []string{l.Organization}
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: sub,
		NotBefore: l.NotBefore, NotAfter: l.NotAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if l.Server {
		// Client auth too: a node presents its keystore's certificate to its peers when
		// the inter-broker listener requires client certificates.
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth,
			x509.ExtKeyUsageClientAuth}
		tmpl.DNSNames = []string{"localhost"}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return Pair{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: pemBlock("CERTIFICATE", der), KeyPEM: pemBlock("PRIVATE KEY", kder)}, nil
}

// Files are the paths Write wrote.
type Files struct {
	Dir        string
	CA         string // ca.pem: the CA certificate (truststores, ssl.ca.location)
	Server     string // server.pem: the server certificate and key (ssl.keystore.location)
	ClientCert string // client.crt: the client certificate
	ClientKey  string // client.key: the client's key
	Client     string // client.pem: both, for clients that take one file
	ClientName string // the client certificate's subject, as a Kafka principal
}

// Write makes a CA, a server certificate and a client certificate (subject
// CN=sluice-dev-client,O=Sluice dev), valid for a year, and writes them into dir
// (created if missing; keys are written 0600).
func Write(dir string) (Files, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Files{}, err
	}
	ca, err := NewCA("Sluice dev CA", 365*24*time.Hour)
	if err != nil {
		return Files{}, err
	}
	srv, err := ca.Issue(Leaf{CommonName: "localhost", Organization: "Sluice dev", Server: true})
	if err != nil {
		return Files{}, err
	}
	cl, err := ca.Issue(Leaf{CommonName: "sluice-dev-client", Organization: "Sluice dev"})
	if err != nil {
		return Files{}, err
	}
	f := Files{Dir: dir, CA: filepath.Join(dir, "ca.pem"), Server: filepath.Join(dir, "server.pem"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
		Client: filepath.Join(dir, "client.pem"), ClientName: "User:CN=sluice-dev-client,O=Sluice dev"}
	var errs []error
	for _, w := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{f.CA, ca.PEM, 0o644}, {f.Server, srv.Combined(), 0o600},
		{f.ClientCert, cl.CertPEM, 0o644}, {f.ClientKey, cl.KeyPEM, 0o600},
		{f.Client, cl.Combined(), 0o600},
	} {
		if err := os.WriteFile(w.path, w.data, w.mode); err != nil {
			errs = append(errs, fmt.Errorf("write %s: %w", w.path, err))
		}
	}
	return f, errors.Join(errs...)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}
