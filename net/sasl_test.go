package net

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/xdg-go/scram"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// fakeScram is a ScramStore holding credentials made from passwords.
type fakeScram map[string]meta.ScramCredential

func (f fakeScram) add(t *testing.T, user, password string, m meta.ScramMechanism) {
	hash := scram.SHA256
	if m == meta.ScramSHA512 {
		hash = scram.SHA512
	}
	cl, err := hash.NewClient(user, password, "")
	require.NoError(t, err)
	sc := cl.GetStoredCredentials(scram.KeyFactors{Salt: "salt-of-" + user, Iters: 4096})
	f[user+"/"+m.String()] = meta.ScramCredential{Mechanism: m, Salt: []byte(sc.Salt),
		StoredKey: sc.StoredKey, ServerKey: sc.ServerKey, Iterations: 4096}
}

func (f fakeScram) ScramCredential(user string, m meta.ScramMechanism) (
	meta.ScramCredential, bool) {
	c, ok := f[user+"/"+m.String()]
	return c, ok
}

// startSASL starts a server with a PLAINTEXT listener and a SASL_PLAINTEXT one that
// enables every mechanism: PLAIN user alice (password alice-secret), SCRAM users bob
// (SHA-256) and carol (SHA-512).
func startSASL(t *testing.T, sink *fakeSink, opts Options) *Server {
	t.Helper()
	store := fakeScram{}
	store.add(t, "bob", "bob-secret", meta.ScramSHA256)
	store.add(t, "carol", "carol-secret", meta.ScramSHA512)
	cfg := &SASLConfig{Mechanisms: SupportedMechanisms(),
		Plain: NewPlainUsers(map[string]string{"alice": "alice-secret"}), Scram: store}
	opts.Logger = zaptest.NewLogger(t)
	srv, err := ListenAll([]Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:0"},
		{Name: "SASL_PLAINTEXT", Addr: "127.0.0.1:0", SASL: cfg}}, sink, opts)
	require.NoError(t, err)
	sink.srv = srv
	srv.Start()
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	return srv
}

func dialSASL(t *testing.T, srv *Server) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", srv.ListenerAddr("SASL_PLAINTEXT"), 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

func handshake(t *testing.T, nc net.Conn, version int16, mech string) *kmsg.SASLHandshakeResponse {
	t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(version)
	req.Mechanism = mech
	send(t, nc, 1, req)
	resp := kmsg.NewPtrSASLHandshakeResponse()
	require.Equal(t, int32(1), readResponse(t, nc, resp, version))
	return resp
}

func authenticate(t *testing.T, nc net.Conn, version int16,
	b []byte) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(version)
	req.SASLAuthBytes = b
	send(t, nc, 2, req)
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	require.Equal(t, int32(2), readResponse(t, nc, resp, version))
	return resp
}

func plainToken(user, password string) []byte {
	return []byte("\x00" + user + "\x00" + password)
}

// requireServedAs sends a Metadata request and checks that it reaches the node with
// the principal, and that its answer comes back.
func requireServedAs(t *testing.T, srv *Server, sink *fakeSink, nc net.Conn, principal string) {
	t.Helper()
	send(t, nc, 7, metadataReq(12))
	r := sink.next(t)
	require.Equal(t, principal, r.Principal)
	srv.Reply(replyTo(r))
	require.Equal(t, int32(7), readResponse(t, nc, kmsg.NewPtrMetadataResponse(), 12))
}

func TestSASLPlainAuthenticatesAndSetsThePrincipal(t *testing.T) {
	sink := newFakeSink(false)
	srv := startSASL(t, sink, Options{})
	nc := dialSASL(t, srv)

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	send(t, nc, 9, av)
	avr := kmsg.NewPtrApiVersionsResponse()
	readResponse(t, nc, avr, 3)
	keys := map[int16]bool{}
	for _, k := range avr.ApiKeys {
		keys[k.ApiKey] = true
	}
	require.True(t, keys[int16(kmsg.SASLHandshake)] && keys[int16(kmsg.SASLAuthenticate)])

	hs := handshake(t, nc, 1, "PLAIN")
	require.Zero(t, hs.ErrorCode)
	require.Equal(t, SupportedMechanisms(), hs.SupportedMechanisms)
	au := authenticate(t, nc, 2, plainToken("alice", "alice-secret"))
	require.Zero(t, au.ErrorCode)
	require.Zero(t, au.SessionLifetimeMillis, "no connections.max.reauth.ms: no expiry")
	requireServedAs(t, srv, sink, nc, "User:alice")

	// Once authenticated, SASL requests are out of place.
	au = authenticate(t, nc, 2, plainToken("alice", "alice-secret"))
	require.Equal(t, kerr.IllegalSaslState.Code, au.ErrorCode)
	requireServedAs(t, srv, sink, nc, "User:alice")
}

func TestSASLWrongCredentialsAreRefusedAndClosed(t *testing.T) {
	sink := newFakeSink(false)
	srv := startSASL(t, sink, Options{FailedAuthDelay: 50 * time.Millisecond})
	for _, tok := range [][]byte{plainToken("alice", "wrong"), plainToken("nobody", "x"),
		[]byte("alice-secret"), []byte("bob\x00alice\x00alice-secret")} {
		nc := dialSASL(t, srv)
		require.Zero(t, handshake(t, nc, 1, "PLAIN").ErrorCode)
		start := time.Now()
		au := authenticate(t, nc, 1, tok)
		require.Equal(t, kerr.SaslAuthenticationFailed.Code, au.ErrorCode)
		require.Contains(t, *au.ErrorMessage, "ailed")
		require.NotContains(t, *au.ErrorMessage, "secret", "credentials are never echoed")
		require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond,
			"connection.failed.authentication.delay.ms")
		requireClosed(t, nc)
	}
	require.EqualValues(t, 4, srv.Stats().SASLFailures)
	require.Empty(t, sink.reqs, "nothing reached the node")
}

func TestSASLScramAuthenticates(t *testing.T) {
	sink := newFakeSink(false)
	srv := startSASL(t, sink, Options{})
	for _, tc := range []struct {
		mech, user, password string
		hash                 scram.HashGeneratorFcn
		ok                   bool
	}{
		{"SCRAM-SHA-256", "bob", "bob-secret", scram.SHA256, true},
		{"SCRAM-SHA-512", "carol", "carol-secret", scram.SHA512, true},
		{"SCRAM-SHA-256", "bob", "wrong", scram.SHA256, false},
		{"SCRAM-SHA-256", "carol", "carol-secret", scram.SHA256, false}, // no SHA-256 one
		{"SCRAM-SHA-512", "nobody", "x", scram.SHA512, false},
	} {
		nc := dialSASL(t, srv)
		require.Zero(t, handshake(t, nc, 1, tc.mech).ErrorCode)
		cl, err := tc.hash.NewClient(tc.user, tc.password, "")
		require.NoError(t, err)
		conv := cl.NewConversation()
		first, err := conv.Step("")
		require.NoError(t, err)
		au := authenticate(t, nc, 2, []byte(first))
		if au.ErrorCode != 0 { // an unknown user fails at the first step
			require.False(t, tc.ok, tc.user)
			require.Equal(t, kerr.SaslAuthenticationFailed.Code, au.ErrorCode)
			requireClosed(t, nc)
			continue
		}
		final, err := conv.Step(string(au.SASLAuthBytes))
		require.NoError(t, err)
		au = authenticate(t, nc, 2, []byte(final))
		if !tc.ok {
			require.Equal(t, kerr.SaslAuthenticationFailed.Code, au.ErrorCode, tc.user)
			require.Contains(t, *au.ErrorMessage, tc.mech)
			requireClosed(t, nc)
			continue
		}
		require.Zero(t, au.ErrorCode, tc.user)
		_, err = conv.Step(string(au.SASLAuthBytes)) // the client checks the server too
		require.NoError(t, err)
		require.True(t, conv.Valid())
		requireServedAs(t, srv, sink, nc, "User:"+tc.user)
	}
}

// SaslHandshake v0 (sarama's default): the exchange runs on bare tokens.
func TestSASLHandshakeV0RunsOnBareTokens(t *testing.T) {
	sink := newFakeSink(false)
	srv := startSASL(t, sink, Options{})
	nc := dialSASL(t, srv)
	require.Zero(t, handshake(t, nc, 0, "PLAIN").ErrorCode)
	tok := plainToken("alice", "alice-secret")
	_, err := nc.Write(binary.BigEndian.AppendUint32(nil, uint32(len(tok))))
	require.NoError(t, err)
	_, err = nc.Write(tok)
	require.NoError(t, err)
	var size [4]byte
	_, err = io.ReadFull(nc, size[:])
	require.NoError(t, err)
	require.Zero(t, binary.BigEndian.Uint32(size[:]), "PLAIN answers an empty token")
	requireServedAs(t, srv, sink, nc, "User:alice")

	bad := dialSASL(t, srv)
	require.Zero(t, handshake(t, bad, 0, "PLAIN").ErrorCode)
	tok = plainToken("alice", "nope")
	_, err = bad.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(tok))), tok...))
	require.NoError(t, err)
	requireClosed(t, bad)
}

func TestSASLRefusesWhatComesBeforeAuthentication(t *testing.T) {
	sink := newFakeSink(false)
	srv := startSASL(t, sink, Options{SASLMaxReceiveSize: 1024})

	nc := dialSASL(t, srv) // a request before authenticating: closed, unanswered
	send(t, nc, 1, metadataReq(12))
	requireClosed(t, nc)

	nc = dialSASL(t, srv) // between handshake and authentication too
	require.Zero(t, handshake(t, nc, 1, "SCRAM-SHA-256").ErrorCode)
	send(t, nc, 1, metadataReq(12))
	requireClosed(t, nc)

	nc = dialSASL(t, srv) // a mechanism not enabled: answered, then closed
	hs := handshake(t, nc, 1, "GSSAPI")
	require.Equal(t, kerr.UnsupportedSaslMechanism.Code, hs.ErrorCode)
	require.Equal(t, SupportedMechanisms(), hs.SupportedMechanisms)
	requireClosed(t, nc)
	require.EqualValues(t, 3, srv.Stats().SASLFailures, "each counted as a failed "+
		"authentication (and logged as one, at most once a second)")

	nc = dialSASL(t, srv) // a frame over sasl.server.max.receive.size
	require.Zero(t, handshake(t, nc, 1, "PLAIN").ErrorCode)
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(2)
	req.SASLAuthBytes = []byte(strings.Repeat("x", 2000))
	send(t, nc, 2, req)
	requireClosed(t, nc)
	require.EqualValues(t, 1, srv.Stats().SASLOversized)
	require.Empty(t, sink.reqs)

	// A plaintext listener answers SASL requests ILLEGAL_SASL_STATE.
	pl := dial(t, srv)
	require.Equal(t, kerr.IllegalSaslState.Code, handshake(t, pl, 1, "PLAIN").ErrorCode)
}

func TestSASLAuthenticationTimesOut(t *testing.T) {
	sink := newFakeSink(false)
	srv := startSASL(t, sink, Options{SASLAuthTimeout: 200 * time.Millisecond})
	idle := dialSASL(t, srv) // never starts
	half := dialSASL(t, srv) // stops after the handshake
	require.Zero(t, handshake(t, half, 1, "PLAIN").ErrorCode)
	start := time.Now()
	requireClosedSoon(t, idle, 3*time.Second)
	requireClosedSoon(t, half, 3*time.Second)
	require.Less(t, time.Since(start), 2*time.Second)
	require.EqualValues(t, 2, srv.Stats().SASLTimeouts)

	ok := dialSASL(t, srv) // an authenticated connection outlives the timeout
	require.Zero(t, handshake(t, ok, 1, "PLAIN").ErrorCode)
	require.Zero(t, authenticate(t, ok, 2, plainToken("alice", "alice-secret")).ErrorCode)
	time.Sleep(400 * time.Millisecond)
	requireServedAs(t, srv, sink, ok, "User:alice")
}

func TestSASLSessionLifetimeAndReauthentication(t *testing.T) {
	sink := newFakeSink(false)
	srv := startSASL(t, sink, Options{ReauthAfter: 500 * time.Millisecond})
	login := func(nc net.Conn, user string) *kmsg.SASLAuthenticateResponse {
		require.Zero(t, handshake(t, nc, 1, "PLAIN").ErrorCode)
		return authenticate(t, nc, 2, plainToken(user, user+"-secret"))
	}
	expired := dialSASL(t, srv)
	au := login(expired, "alice")
	require.Zero(t, au.ErrorCode)
	require.EqualValues(t, 500, au.SessionLifetimeMillis)
	renewed := dialSASL(t, srv)
	require.Zero(t, login(renewed, "alice").ErrorCode)

	time.Sleep(300 * time.Millisecond)
	require.Zero(t, login(renewed, "alice").ErrorCode, "re-authentication (KIP-368)")
	time.Sleep(300 * time.Millisecond)
	requireServedAs(t, srv, sink, renewed, "User:alice")
	send(t, expired, 7, metadataReq(12))
	requireClosed(t, expired)
	require.EqualValues(t, 1, srv.Stats().SASLExpired)
}

// rfc7677 is RFC 7677's SCRAM-SHA-256 example: user "user", password "pencil".
var rfc7677 = struct {
	salt64, snonce, first, serverFirst, final, serverFinal string
}{
	salt64: "W22ZaJ0SNY7soEsUEjb6gQ==", snonce: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	first: "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
	serverFirst: "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0," +
		"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
	final: "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0," +
		"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	serverFinal: "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}

func rfcExchange(t *testing.T) *scramExchange {
	salt, err := base64.StdEncoding.DecodeString(rfc7677.salt64)
	require.NoError(t, err)
	spw, err := pbkdf2.Key(sha256.New, "pencil", salt, 4096, 32)
	require.NoError(t, err)
	stored, server := broker.ScramKeys(meta.ScramSHA256, spw)
	store := fakeScram{"user/SCRAM-SHA-256": {Mechanism: meta.ScramSHA256, Salt: salt,
		StoredKey: stored, ServerKey: server, Iterations: 4096}}
	x := newScramExchange(MechScramSHA256, store).(*scramExchange)
	x.newNonce = func() string { return rfc7677.snonce }
	return x
}

// The server side reproduces RFC 7677's example exchange byte for byte.
func TestScramServerFollowsRFC7677(t *testing.T) {
	x := rfcExchange(t)
	out, user, err := x.step([]byte(rfc7677.first))
	require.NoError(t, err)
	require.Empty(t, user, "not authenticated after the first step")
	require.Equal(t, rfc7677.serverFirst, string(out))
	out, user, err = x.step([]byte(rfc7677.final))
	require.NoError(t, err)
	require.Equal(t, "user", user)
	require.Equal(t, rfc7677.serverFinal, string(out))

	// A tampered proof, a foreign nonce, another channel binding: refused.
	for _, bad := range []string{
		strings.Replace(rfc7677.final, "p=dHzb", "p=dHza", 1),
		strings.Replace(rfc7677.final, "r=rOpr", "r=xOpr", 1),
		strings.Replace(rfc7677.final, "c=biws", "c=eSws", 1),
		"c=biws,r=x",
	} {
		x := rfcExchange(t)
		_, _, err := x.step([]byte(rfc7677.first))
		require.NoError(t, err)
		_, _, err = x.step([]byte(bad))
		require.Error(t, err, bad)
	}
}

// librdkafka before 2.6.1 sends the client nonce twice in its final message; Kafka 3.x
// accepts it, and so do we. The proof is over what the client sent.
func TestScramServerAcceptsLibrdkafkaNonce(t *testing.T) {
	x := rfcExchange(t)
	_, _, err := x.step([]byte(rfc7677.first))
	require.NoError(t, err)
	salt, _ := base64.StdEncoding.DecodeString(rfc7677.salt64)
	spw, _ := pbkdf2.Key(sha256.New, "pencil", salt, 4096, 32)
	wop := "c=biws,r=rOprNGfwEbeRWgbNEkqO" + "rOprNGfwEbeRWgbNEkqO" + rfc7677.snonce
	authMsg := "n=user,r=rOprNGfwEbeRWgbNEkqO," + rfc7677.serverFirst + "," + wop
	ck := hmac.New(sha256.New, spw)
	ck.Write([]byte("Client Key"))
	clientKey := ck.Sum(nil)
	stored := sha256.Sum256(clientKey)
	sig := hmac.New(sha256.New, stored[:])
	sig.Write([]byte(authMsg))
	proof := sig.Sum(nil)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	_, user, err := x.step([]byte(wop + ",p=" + base64.StdEncoding.EncodeToString(proof)))
	require.NoError(t, err)
	require.Equal(t, "user", user)
}

func TestDecodeSaslName(t *testing.T) {
	for in, want := range map[string]string{"bob": "bob", "a=2Cb": "a,b", "a=3D=3D": "a=="} {
		got, ok := decodeSaslName(in)
		require.True(t, ok)
		require.Equal(t, want, got)
	}
	for _, bad := range []string{"a=", "a=2", "a=41"} {
		_, ok := decodeSaslName(bad)
		require.False(t, ok, bad)
	}
}
