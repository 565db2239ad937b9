package net

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"

	"github.com/sluicemq/sluice/internal/devcert"
)

// pki is a throw-away CA with a server key pair in a file and a client certificate.
type pki struct {
	ca         *devcert.CA
	serverFile string
	client     tls.Certificate
	roots      *x509.CertPool
	caFile     string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	ca, err := devcert.NewCA("test CA", time.Hour)
	require.NoError(t, err)
	srv, err := ca.Issue(devcert.Leaf{CommonName: "server-1", Server: true})
	require.NoError(t, err)
	cl, err := ca.Issue(devcert.Leaf{CommonName: "writer", Organization: "Acme"})
	require.NoError(t, err)
	p := &pki{ca: ca, serverFile: filepath.Join(dir, "server.pem"),
		caFile: filepath.Join(dir, "ca.pem"), roots: x509.NewCertPool()}
	require.NoError(t, os.WriteFile(p.serverFile, srv.Combined(), 0o600))
	require.NoError(t, os.WriteFile(p.caFile, ca.PEM, 0o600))
	p.roots.AddCert(ca.Cert)
	p.client, err = tls.X509KeyPair(cl.CertPEM, cl.KeyPEM)
	require.NoError(t, err)
	return p
}

// serverTLS is a listener's config from settings, as a node builds it.
func (p *pki) serverTLS(t *testing.T, kv ...string) *tls.Config {
	t.Helper()
	s := TLSSettings{}
	kv = append([]string{"ssl.keystore.location", p.serverFile,
		"ssl.truststore.location", p.caFile}, kv...)
	for i := 0; i < len(kv); i += 2 {
		known, err := s.Set(kv[i], kv[i+1])
		require.True(t, known, kv[i])
		require.NoError(t, err)
	}
	cfg, err := s.ServerConfig(zaptest.NewLogger(t))
	require.NoError(t, err)
	return cfg
}

func (p *pki) clientTLS(withCert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: p.roots, ServerName: "127.0.0.1"}
	if withCert {
		cfg.Certificates = []tls.Certificate{p.client}
	}
	return cfg
}

// startListeners starts a server with a PLAINTEXT listener and an SSL one.
func startListeners(t *testing.T, sink *fakeSink, opts Options, sslCfg *tls.Config) *Server {
	t.Helper()
	opts.Logger = zaptest.NewLogger(t)
	srv, err := ListenAll([]Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"},
		{Name: "SSL", Addr: "127.0.0.1:0", TLS: sslCfg}}, sink, opts)
	require.NoError(t, err)
	sink.srv = srv
	srv.Start()
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv
}

func dialTLS(t *testing.T, addr string, cfg *tls.Config) (*tls.Conn, error) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	tc, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	require.NoError(t, tc.SetDeadline(time.Now().Add(10*time.Second)))
	t.Cleanup(func() { _ = tc.Close() })
	return tc, nil
}

// Each request carries the listener it arrived on and the connection's principal:
// ANONYMOUS on plaintext and on TLS without a client certificate, the certificate's
// subject with one.
func TestRequestsCarryListenerAndPrincipal(t *testing.T) {
	p := newPKI(t)
	sink := newFakeSink(false)
	srv := startListeners(t, sink, Options{}, p.serverTLS(t, "ssl.client.auth", "requested"))

	plain := dial(t, srv)
	send(t, plain, 1, metadataReq(12))
	r := sink.next(t)
	require.Equal(t, "PLAINTEXT", r.Listener)
	require.Equal(t, Anonymous, r.Principal)
	srv.Reply(replyTo(r))
	require.Equal(t, int32(1), readResponse(t, plain, kmsg.NewPtrMetadataResponse(), 12))

	for _, tc := range []struct {
		cert bool
		want string
	}{{false, Anonymous}, {true, "User:CN=writer,O=Acme"}} {
		nc, err := dialTLS(t, srv.ListenerAddr("SSL"), p.clientTLS(tc.cert))
		require.NoError(t, err)
		send(t, nc, 2, metadataReq(12))
		r := sink.next(t)
		require.Equal(t, "SSL", r.Listener)
		require.Equal(t, tc.want, r.Principal)
		srv.Reply(replyTo(r))
		require.Equal(t, int32(2), readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
	}
}

// ssl.client.auth=required: a client without a certificate is refused at the
// handshake, its request never reaches the node, and the node keeps serving others.
func TestRequiredClientAuthRefusesAClientWithoutCertificate(t *testing.T) {
	p := newPKI(t)
	sink := newFakeSink(true)
	srv := startListeners(t, sink, Options{}, p.serverTLS(t, "ssl.client.auth", "required"))

	nc, err := dialTLS(t, srv.ListenerAddr("SSL"), p.clientTLS(false))
	if err == nil { // TLS 1.3: the client learns of the refusal at its first read
		_, _ = nc.Write(frame(1, metadataReq(12)))
		require.NoError(t, nc.SetReadDeadline(time.Now().Add(5*time.Second)))
		var b [1]byte
		_, err = nc.Read(b[:])
	}
	require.Error(t, err)
	require.NotContains(t, err.Error(), "timeout")
	require.Eventually(t, func() bool { return srv.Stats().TLSHandshakeFailures == 1 },
		5*time.Second, 10*time.Millisecond)
	sink.mu.Lock()
	require.Empty(t, sink.reqs)
	sink.mu.Unlock()

	good, err := dialTLS(t, srv.ListenerAddr("SSL"), p.clientTLS(true))
	require.NoError(t, err)
	send(t, good, 3, metadataReq(12))
	require.Equal(t, int32(3), readResponse(t, good, kmsg.NewPtrMetadataResponse(), 12))
}

// A plaintext Kafka client on the TLS port is closed (its frame is no ClientHello),
// and a TLS client on the plaintext port is closed too (its ClientHello read as a
// frame size is far above socket.request.max.bytes); both listeners keep serving.
func TestWrongProtocolOnAListenerIsClosedCleanly(t *testing.T) {
	p := newPKI(t)
	sink := newFakeSink(true)
	srv := startListeners(t, sink, Options{}, p.serverTLS(t))

	nc, err := net.DialTimeout("tcp", srv.ListenerAddr("SSL"), 5*time.Second)
	require.NoError(t, err)
	defer nc.Close()
	_, err = nc.Write(frame(1, metadataReq(12)))
	require.NoError(t, err)
	requireClosedSoon(t, nc, 5*time.Second)

	_, err = dialTLS(t, srv.ListenerAddr("PLAINTEXT"), p.clientTLS(false))
	require.Error(t, err)

	plain := dial(t, srv)
	send(t, plain, 2, metadataReq(12))
	require.Equal(t, int32(2), readResponse(t, plain, kmsg.NewPtrMetadataResponse(), 12))
	good, err := dialTLS(t, srv.ListenerAddr("SSL"), p.clientTLS(false))
	require.NoError(t, err)
	send(t, good, 3, metadataReq(12))
	require.Equal(t, int32(3), readResponse(t, good, kmsg.NewPtrMetadataResponse(), 12))
}

// requireClosedSoon asserts the server closes nc within d (reading whatever it sends,
// such as a TLS alert, first).
func requireClosedSoon(t *testing.T, nc net.Conn, d time.Duration) {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(d)))
	buf := make([]byte, 512)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the server did not close the connection within %v", d)
		}
		return
	}
}

// A client that opens a TLS connection and never sends its ClientHello, or stops
// half-way, holds its connection slot no longer than sluice.request.read.timeout.ms.
func TestTLSHandshakeIsBounded(t *testing.T) {
	p := newPKI(t)
	sink := newFakeSink(true)
	srv := startListeners(t, sink, Options{RequestReadTimeout: 300 * time.Millisecond,
		MaxConns: 2}, p.serverTLS(t))

	silent, err := net.DialTimeout("tcp", srv.ListenerAddr("SSL"), 5*time.Second)
	require.NoError(t, err)
	defer silent.Close()
	partial, err := net.DialTimeout("tcp", srv.ListenerAddr("SSL"), 5*time.Second)
	require.NoError(t, err)
	defer partial.Close()
	_, err = partial.Write([]byte{0x16, 0x03, 0x01, 0x01, 0x00, 0x01}) // a record header
	require.NoError(t, err)

	start := time.Now()
	requireClosedSoon(t, silent, 3*time.Second)
	requireClosedSoon(t, partial, 3*time.Second)
	require.Less(t, time.Since(start), 2*time.Second)
	require.Eventually(t, func() bool { return srv.Conns() == 0 }, 5*time.Second,
		10*time.Millisecond)
	st := srv.Stats()
	require.Equal(t, uint64(2), st.TLSHandshakeFailures)
	require.Equal(t, uint64(2), st.ReadTimeouts)

	// The slots are free again: max.connections=2 lets two good clients in.
	for i := 0; i < 2; i++ {
		nc, err := dialTLS(t, srv.ListenerAddr("SSL"), p.clientTLS(false))
		require.NoError(t, err)
		send(t, nc, 7, metadataReq(12))
		require.Equal(t, int32(7), readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
	}
}

// A TLS connection never takes the direct-write path (which writes plain bytes on the
// socket): answers flushed "directly" still reach the client intact, Fetch included.
func TestTLSResponsesNeverBypassTheTLSConn(t *testing.T) {
	p := newPKI(t)
	sink := newFakeSink(false)
	srv := startListeners(t, sink, Options{}, p.serverTLS(t))
	nc, err := dialTLS(t, srv.ListenerAddr("SSL"), p.clientTLS(false))
	require.NoError(t, err)
	rep := srv.NewReplier()
	for corr := int32(1); corr <= 20; corr++ {
		send(t, nc, corr, metadataReq(12))
		r := sink.next(t)
		srv.mu.RLock()
		c := srv.conns[r.Conn]
		srv.mu.RUnlock()
		require.Nil(t, c.rc, "a TLS connection must have no raw socket for direct writes")
		rep.Reply(replyTo(r))
		rep.Flush(true)
		require.Equal(t, corr, readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	send(t, nc, 99, fetch)
	rep.Reply(replyTo(sink.next(t)))
	rep.Flush(true)
	require.Equal(t, int32(99), readResponse(t, nc, kmsg.NewPtrFetchResponse(), 11))
}

// An expired server certificate is refused by a verifying client.
func TestExpiredServerCertificateIsRefusedByClients(t *testing.T) {
	p := newPKI(t)
	old, err := p.ca.Issue(devcert.Leaf{CommonName: "server-1", Server: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p.serverFile, old.Combined(), 0o600))
	sink := newFakeSink(true)
	srv := startListeners(t, sink, Options{}, p.serverTLS(t))
	_, err = dialTLS(t, srv.ListenerAddr("SSL"), p.clientTLS(false))
	require.ErrorContains(t, err, "expired")
}

// Replacing the keystore file changes the certificate new connections get; open
// connections keep working; a file that does not load keeps the certificate in use.
func TestKeystoreReloadWithoutRestart(t *testing.T) {
	p := newPKI(t)
	sink := newFakeSink(true)
	srv := startListeners(t, sink, Options{}, p.serverTLS(t,
		"sluice.ssl.keystore.reload.check.ms", "1"))
	leafCN := func(tc *tls.Conn) string {
		return tc.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	old, err := dialTLS(t, srv.ListenerAddr("SSL"), p.clientTLS(false))
	require.NoError(t, err)
	require.Equal(t, "server-1", leafCN(old))

	next, err := p.ca.Issue(devcert.Leaf{CommonName: "server-2", Server: true})
	require.NoError(t, err)
	first, err := os.Stat(p.serverFile)
	require.NoError(t, err)
	writeReplacing(t, p.serverFile, next.Combined())
	// Written within the kernel's timestamp granularity, the new file can keep the old
	// modification time (and a renewed certificate its size): the content decides.
	require.NoError(t, os.Chtimes(p.serverFile, first.ModTime(), first.ModTime()))
	time.Sleep(5 * time.Millisecond) // past the 1 ms check interval
	nc, err := dialTLS(t, srv.ListenerAddr("SSL"), p.clientTLS(false))
	require.NoError(t, err)
	require.Equal(t, "server-2", leafCN(nc))

	send(t, old, 1, metadataReq(12))
	require.Equal(t, int32(1), readResponse(t, old, kmsg.NewPtrMetadataResponse(), 12))

	writeReplacing(t, p.serverFile, []byte("not a certificate"))
	time.Sleep(5 * time.Millisecond)
	nc, err = dialTLS(t, srv.ListenerAddr("SSL"), p.clientTLS(false))
	require.NoError(t, err)
	require.Equal(t, "server-2", leafCN(nc), "a bad file keeps the certificate in use")
	send(t, nc, 2, metadataReq(12))
	require.Equal(t, int32(2), readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
}

// writeReplacing replaces a file the way operators should: write a new one, rename it.
func writeReplacing(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func TestTLSSettingsRefuseWhatIsNotSupported(t *testing.T) {
	for _, tc := range [][2]string{
		{"ssl.keystore.type", "JKS"}, {"ssl.enabled.protocols", "TLSv1.1,TLSv1.2"},
		{"ssl.client.auth", "maybe"}, {"ssl.key.password", "secret"},
		{"ssl.principal.mapping.rules", "RULE:^CN=(.*)$/$1/"},
	} {
		var s TLSSettings
		known, err := s.Set(tc[0], tc[1])
		require.True(t, known)
		require.Error(t, err, tc[0])
	}
	var s TLSSettings
	_, err := s.ServerConfig(zaptest.NewLogger(t))
	require.ErrorContains(t, err, "ssl.keystore.location")
	p := newPKI(t)
	s = TLSSettings{KeystoreLocation: p.serverFile, ClientAuth: "required"}
	_, err = s.ServerConfig(zaptest.NewLogger(t))
	require.ErrorContains(t, err, "ssl.truststore.location")
	s = TLSSettings{KeystoreLocation: p.serverFile, EnabledProtocols: "TLSv1.3"}
	cfg, err := s.ServerConfig(zaptest.NewLogger(t))
	require.NoError(t, err)
	require.Equal(t, uint16(tls.VersionTLS13), cfg.MinVersion)
}

func TestParseListeners(t *testing.T) {
	ls, err := ParseListeners("PLAINTEXT://127.0.0.1:9092, INTERNAL://:9093")
	require.NoError(t, err)
	require.Equal(t, []ListenerAddr{{"PLAINTEXT", "127.0.0.1", 9092}, {"INTERNAL", "", 9093}}, ls)
	for _, bad := range []string{"", "127.0.0.1:9092", "A://h:1,A://h:2", "A://h:x"} {
		_, err := ParseListeners(bad)
		require.Error(t, err, bad)
	}
	m, err := ParseProtocolMap("INTERNAL:PLAINTEXT,EXTERNAL:ssl")
	require.NoError(t, err)
	require.Equal(t, map[string]Protocol{"INTERNAL": Plaintext, "EXTERNAL": SSL}, m)
	require.NoError(t, SASLSSL.Supported())
	require.Error(t, Protocol("SASL_GSSAPI").Supported())
	require.NoError(t, SSL.Supported())
}

// Inline PEM settings are one config-file line: written with \n, or on one line with
// spaces, they still load.
func TestInlinePEMSettings(t *testing.T) {
	ca, err := devcert.NewCA("inline CA", time.Hour)
	require.NoError(t, err)
	pair, err := ca.Issue(devcert.Leaf{CommonName: "inline", Server: true})
	require.NoError(t, err)
	oneLine := func(b []byte) string { return strings.ReplaceAll(string(b), "\n", " ") }
	escaped := func(b []byte) string { return strings.ReplaceAll(string(b), "\n", `\n`) }
	for _, form := range []func([]byte) string{oneLine, escaped} {
		var s TLSSettings
		for _, kv := range [][2]string{{"ssl.keystore.certificate.chain", form(pair.CertPEM)},
			{"ssl.keystore.key", form(pair.KeyPEM)},
			{"ssl.truststore.certificates", form(ca.PEM)}, {"ssl.client.auth", "required"}} {
			_, err := s.Set(kv[0], kv[1])
			require.NoError(t, err)
		}
		cfg, err := s.ServerConfig(zaptest.NewLogger(t))
		require.NoError(t, err)
		cert, err := cfg.GetCertificate(nil)
		require.NoError(t, err)
		require.Equal(t, "inline", cert.Leaf.Subject.CommonName)
	}
}

// A TLS client reading a large response slowly but steadily (more than 64 KiB per
// write timeout) is not cut off: crypto/tls cannot continue a write after a deadline,
// so the writer gives each 64 KiB piece its own deadline. The whole response takes
// longer than the timeout. The timeout leaves the reader about 950 ms of scheduling
// stall per piece: with 300 ms the test failed 1 run in 4 at load 15-20.
func TestSlowTLSReaderOfALargeResponseIsNotCutOff(t *testing.T) {
	p := newPKI(t)
	sink := newFakeSink(false)
	const timeout = time.Second
	srv := startListeners(t, sink, Options{WriteTimeout: timeout}, p.serverTLS(t))
	// Small socket buffers on both sides, so that the kernel cannot take the whole
	// response at once and the writer must wait for the reader.
	raw, err := net.DialTimeout("tcp", srv.ListenerAddr("SSL"), 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, raw.(*net.TCPConn).SetReadBuffer(64<<10))
	nc := tls.Client(raw, p.clientTLS(false))
	t.Cleanup(func() { _ = nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(30*time.Second)))
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	send(t, nc, 1, fetch)
	r := sink.next(t)
	srv.mu.RLock()
	require.NoError(t, srv.conns[r.Conn].raw.(*net.TCPConn).SetWriteBuffer(64<<10))
	srv.mu.RUnlock()
	resp := fetch.ResponseKind().(*kmsg.FetchResponse)
	resp.SetVersion(11)
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "big"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = make([]byte, 3<<20)
	for i := range rp.RecordBatches {
		rp.RecordBatches[i] = byte(i)
	}
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	began := time.Now()
	srv.Reply(broker.Reply{Conn: r.Conn, ID: r.ID, Msg: resp})

	var got []byte
	buf := make([]byte, 32<<10)
	for paced := 0; ; {
		if len(got)-paced >= 32<<10 { // about 1.6 MB/s: 64 KiB in 40 ms, 1 MiB in 650 ms
			time.Sleep(20 * time.Millisecond)
			paced = len(got)
		}
		n, err := nc.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("read %d bytes, then: %v (write timeouts %d)", len(got), err,
				srv.Stats().WriteTimeouts)
		}
		if len(got) >= 4 && len(got)-4 >= int(binary.BigEndian.Uint32(got)) {
			break
		}
	}
	got = got[4:]
	require.Equal(t, int32(1), int32(binary.BigEndian.Uint32(got)))
	back := kmsg.NewPtrFetchResponse()
	back.SetVersion(11)
	require.NoError(t, back.ReadFrom(got[4:]))
	require.Equal(t, rp.RecordBatches, back.Topics[0].Partitions[0].RecordBatches)
	require.Zero(t, srv.Stats().WriteTimeouts)
	require.Greater(t, time.Since(began), timeout, "the whole response took longer than "+
		"the write timeout, so one deadline for all of it would have cut it off")
}
