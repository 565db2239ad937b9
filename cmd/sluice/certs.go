package main

// sluice certs DIR: the throw-away CA, server and client certificates that `sluice dev
// --tls` makes, written for a node started by hand (or by scripts/bench.sh) with an SSL
// listener. For trying TLS only: the CA's key is not kept, and nothing is renewed.

import (
	"fmt"
	"io"

	"github.com/sluicemq/sluice/internal/devcert"
)

func init() {
	register("certs", command{summary: "write a throw-away CA and certificates for trying TLS",
		run: runCerts})
}

func runCerts(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("certs", "sluice certs DIR", stderr)
	rest, err := parseArgs(fs, args)
	if err != nil {
		return exitStatus("sluice certs", err, stderr)
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, "sluice certs: want one folder to write the certificates to")
		fs.Usage()
		return 2
	}
	f, err := devcert.Write(rest[0])
	if err != nil {
		fmt.Fprintf(stderr, "sluice certs: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "ca.pem      %s (truststores: ssl.truststore.location, --tls-ca)\n"+
		"server.pem  %s (certificate and key: ssl.keystore.location)\n"+
		"client.crt  %s, client.key %s (--tls-cert, --tls-key)\n"+
		"The server certificate is for 127.0.0.1, ::1 and localhost; the client's principal "+
		"is %s. Valid for a year; for trying TLS only.\n", f.CA, f.Server, f.ClientCert,
		f.ClientKey, f.ClientName)
	return 0
}
