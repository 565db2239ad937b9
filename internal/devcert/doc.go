// Package devcert makes throw-away certificates for trying TLS and for tests: a CA,
// server certificates for 127.0.0.1 and localhost, and client certificates, all ECDSA
// P-256 keys in PEM. `sluice dev --tls` writes a set with Write; tests issue their own
// (an expired one, a second server certificate for reload). Nothing here is meant for
// production certificates.
package devcert
