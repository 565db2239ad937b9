package main

// `sluice dev`: a throw-away single node for trying things out. Its data lives in a
// temporary directory removed at exit; it listens on loopback only. With --tls it also
// has an SSL listener, with a throw-away CA, server and client certificate
// (internal/devcert), and a SASL_SSL listener with a SASL user (dev_sasl.go); with
// --sasl a SASL_PLAINTEXT listener with that user. It prints how to connect.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	stdnet "net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/internal/devcert"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
)

func init() {
	register("dev", command{summary: "run a throw-away node for trying things out " +
		"(--tls: SSL and SASL_SSL with generated certificates and a SASL user; " +
		"--sasl: SASL_PLAINTEXT)", run: runDev})
}

const devSynopsis = "sluice dev [--listen 127.0.0.1:9092] [--tls] [--tls-listen 127.0.0.1:9093] " +
	"[--tls-dir DIR] [--client-auth none|requested|required] [--sasl] " +
	"[--sasl-listen 127.0.0.1:9094] [--sasl-ssl-listen 127.0.0.1:9095] " +
	"[--http-listen HOST:PORT] [--log-level LEVEL] | " +
	"sluice dev --nodes N [--data DIR] [--base-port P] [--log-level LEVEL]"

func runDev(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("sluice dev", devSynopsis, stderr)
	listen := fs.String("listen", "127.0.0.1:9092", "loopback `HOST:PORT` of the PLAINTEXT listener")
	useTLS := fs.Bool("tls", false, "add an SSL listener and a SASL_SSL one, with a "+
		"throw-away CA and certificates and user admin with a password drawn at start "+
		"(with --nodes: run the metadata quorum over mutual TLS)")
	tlsListen := fs.String("tls-listen", "127.0.0.1:9093", "loopback `HOST:PORT` of the SSL listener")
	tlsDir := fs.String("tls-dir", "", "write the certificates to `DIR` and keep them "+
		"(default: in the temporary directory, removed at exit)")
	clientAuth := fs.String("client-auth", "requested", "ssl.client.auth of the SSL "+
		"listener: none, requested or required (SASL_SSL asks for no certificate)")
	useSASL := fs.Bool("sasl", false, "add a SASL_PLAINTEXT listener with user admin "+
		"and a password drawn at start")
	saslListen := fs.String("sasl-listen", "127.0.0.1:9094", "loopback `HOST:PORT` of "+
		"the SASL_PLAINTEXT listener")
	saslSSLListen := fs.String("sasl-ssl-listen", "127.0.0.1:9095", "loopback `HOST:PORT` "+
		"of the SASL_SSL listener (with --tls)")
	httpListen := fs.String("http-listen", "", "`HOST:PORT` for /metrics and the web "+
		"console (default: none)")
	logLevel := fs.String("log-level", "warn", "least `LEVEL` logged: debug, info, warn or error")
	nodes := fs.Int("nodes", 1, "run a cluster of `N` node processes (a metadata quorum of "+
		"N voters) instead of one node")
	data := fs.String("data", "", "with --nodes: keep the nodes' data in `DIR` (node-1, "+
		"node-2, ...) instead of a temporary directory removed at exit")
	basePort := fs.Int("base-port", 9092, "with --nodes: node N's Kafka listener is on "+
		"127.0.0.1:`P`+N-1, its quorum transport on P+100+N-1")
	if _, err := parseCommand(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *nodes > 1 || set["nodes"] {
		return devClusterCommand(fs, set, *nodes, *basePort, *data, *logLevel, stdout, stderr)
	}
	if set["data"] || set["base-port"] {
		return usageNode(fs, "--data and --base-port are for a cluster (--nodes N)")
	}
	for _, a := range []string{*listen, *tlsListen, *saslListen, *saslSSLListen} {
		if err := requireLoopback(a); err != nil {
			return usageNode(fs, "%v", err)
		}
	}
	lg, err := newNodeLogger(stderr, "console", *logLevel)
	if err != nil {
		return usageNode(fs, "%v", err)
	}
	tmp, err := os.MkdirTemp("", "sluice-dev-")
	if err != nil {
		fmt.Fprintf(stderr, "sluice dev: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	opts := runtime.Options{DataDir: filepath.Join(tmp, "data"), Logger: lg,
		Config: broker.DefaultConfig(), HTTPListen: *httpListen, ConsoleAdmin: true,
		DrainTimeout: 2 * time.Second,
		Listeners: []runtime.Listener{{Name: "PLAINTEXT", Addr: *listen,
			Protocol: kafkanet.Plaintext}}}
	var files devcert.Files
	if *useTLS {
		dir := *tlsDir
		if dir == "" {
			dir = filepath.Join(tmp, "tls")
		}
		if files, err = devcert.Write(dir); err != nil {
			fmt.Fprintf(stderr, "sluice dev: %v\n", err)
			return 1
		}
		ssl := runtime.Listener{Name: "SSL", Addr: *tlsListen, Protocol: kafkanet.SSL}
		for _, kv := range [][2]string{{"ssl.keystore.location", files.Server},
			{"ssl.truststore.location", files.CA}, {"ssl.client.auth", *clientAuth}} {
			if _, err := ssl.TLS.Set(kv[0], kv[1]); err != nil {
				return usageNode(fs, "%v", err)
			}
		}
		if err := writeClientProperties(files); err != nil {
			fmt.Fprintf(stderr, "sluice dev: %v\n", err)
			return 1
		}
		opts.Listeners = append(opts.Listeners, ssl)
	}
	var sasl *devSASL
	if *useSASL || *useTLS {
		var ssl *runtime.Listener
		if *useTLS {
			l := opts.Listeners[len(opts.Listeners)-1]
			ssl = &l
		}
		if sasl, err = addDevSASL(&opts, tmp, *useSASL, *saslListen, *saslSSLListen,
			ssl); err != nil {
			fmt.Fprintf(stderr, "sluice dev: %v\n", err)
			return 1
		}
	}
	return serveNode(opts, stderr, func(n *runtime.Node) {
		printDevBanner(stdout, n, tmp, *useTLS, *tlsDir != "", *clientAuth, files)
		if sasl == nil {
			return
		}
		if err := sasl.createSCRAMUser(n.ListenerAddr("PLAINTEXT")); err != nil {
			fmt.Fprintf(stderr, "sluice dev: cannot create the SCRAM user (PLAIN still "+
				"works): %v\n", err)
		}
		var b strings.Builder
		sasl.banner(&b, n, files.CA)
		_, _ = io.WriteString(stdout, b.String())
	})
}

// requireLoopback refuses a listen address other people could reach: a dev node has
// no authentication worth the name.
func requireLoopback(addr string) error {
	host, _, err := stdnet.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if ip := stdnet.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%s: sluice dev listens on loopback addresses only (127.0.0.1); "+
			"run `sluice node` for anything else", addr)
	}
	return nil
}

// writeClientProperties writes client.properties: the Java client's settings.
func writeClientProperties(f devcert.Files) error {
	text := "# Kafka Java client settings for the sluice dev SSL listener\n" +
		"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + f.CA +
		"\nssl.keystore.type=PEM\nssl.keystore.location=" + f.Client + "\n"
	return os.WriteFile(filepath.Join(f.Dir, "client.properties"), []byte(text), 0o600)
}

func printDevBanner(w io.Writer, n *runtime.Node, tmp string, useTLS, keepTLS bool,
	clientAuth string, f devcert.Files) {
	plain := n.ListenerAddr("PLAINTEXT")
	var b strings.Builder
	fmt.Fprintf(&b, "sluice dev: a throw-away node; its data (%s) is removed when it stops "+
		"(Ctrl-C).\n\n  PLAINTEXT  %s\n", tmp, plain)
	if useTLS {
		ssl := n.ListenerAddr("SSL")
		where := "removed at exit"
		if keepTLS {
			where = "kept"
		}
		fmt.Fprintf(&b, "  SSL        %s  (client certificates: %s)\n\n", ssl, clientAuth)
		fmt.Fprintf(&b, "Certificates in %s (%s): ca.pem, server.pem, client.crt, "+
			"client.key, client.pem, client.properties.\nThe client certificate's principal "+
			"is %s.\n\n", f.Dir, where, f.ClientName)
		fmt.Fprintf(&b, "kcat:\n  kcat -b %s -X security.protocol=SSL -X ssl.ca.location=%s "+
			"-X ssl.certificate.location=%s -X ssl.key.location=%s -L\n\n", ssl, f.CA,
			f.ClientCert, f.ClientKey)
		fmt.Fprintf(&b, "sluice:\n  sluice topic list --bootstrap %s --tls-ca %s --tls-cert %s "+
			"--tls-key %s\n\n", ssl, f.CA, f.ClientCert, f.ClientKey)
		fmt.Fprintf(&b, "franz-go:\n  cert, _ := tls.LoadX509KeyPair(%q, %q)\n"+
			"  pool := x509.NewCertPool(); ca, _ := os.ReadFile(%q); pool.AppendCertsFromPEM(ca)\n"+
			"  kgo.NewClient(kgo.SeedBrokers(%q), kgo.DialTLSConfig(&tls.Config{RootCAs: pool, "+
			"Certificates: []tls.Certificate{cert}}))\n\n", f.ClientCert, f.ClientKey, f.CA, ssl)
		fmt.Fprintf(&b, "Java clients: --command-config %s\n",
			filepath.Join(f.Dir, "client.properties"))
	} else {
		fmt.Fprintf(&b, "\nkcat:\n  kcat -b %s -L\n", plain)
	}
	_, _ = io.WriteString(w, b.String())
}
