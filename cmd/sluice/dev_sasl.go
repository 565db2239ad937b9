package main

// `sluice dev --tls` and `--sasl`: SASL listeners on the throw-away node (SASL_SSL with
// --tls, SASL_PLAINTEXT with --sasl), with one user, admin, whose password is drawn at
// start and printed: PLAIN (from a users file in the temporary directory) and
// SCRAM-SHA-256/512 (created through the PLAINTEXT listener once the node serves); and
// OAUTHBEARER, against a JWKS of a key drawn at start, with a token for admin valid a
// day written beside it.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicemq/sluice/core/broker"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
)

const devSASLUser = "admin"

// devSASL are the SASL listeners of a dev node and its user's password.
type devSASL struct {
	password  string
	plain     bool   // a SASL_PLAINTEXT listener (--sasl)
	ssl       bool   // a SASL_SSL listener (--tls)
	tokenFile string // admin's OAUTHBEARER token
}

// addDevSASL adds, when plain, a SASL_PLAINTEXT listener at addr, and with TLS (tls
// set: the SSL listener's settings) a SASL_SSL one at sslAddr, each with PLAIN, SCRAM
// and OAUTHBEARER; and turns the authorizer on.
func addDevSASL(opts *runtime.Options, tmp string, plain bool, addr, sslAddr string,
	tls *runtime.Listener) (*devSASL, error) {
	var pw [12]byte
	_, _ = rand.Read(pw[:])
	d := &devSASL{password: hex.EncodeToString(pw[:]), plain: plain, ssl: tls != nil}
	dir := filepath.Join(tmp, "sasl")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	users := filepath.Join(dir, "users")
	if err := os.WriteFile(users, []byte(devSASLUser+":"+d.password+"\n"), 0o600); err != nil {
		return nil, err
	}
	jwks, err := d.writeOAuth(dir)
	if err != nil {
		return nil, err
	}
	settings := kafkanet.SASLSettings{PlainUsersFile: users, JWKSFile: jwks,
		Mechanisms: "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER"}
	if plain {
		opts.Listeners = append(opts.Listeners, runtime.Listener{Name: "SASL_PLAINTEXT",
			Addr: addr, Protocol: kafkanet.SASLPlaintext, SASL: settings})
	}
	if tls != nil {
		// The SASL user is the client: no client certificate is asked for, whatever
		// --client-auth makes the SSL listener do, so the banner's kcat line works.
		t := tls.TLS
		t.ClientAuth = "none"
		opts.Listeners = append(opts.Listeners, runtime.Listener{Name: "SASL_SSL",
			Addr: sslAddr, Protocol: kafkanet.SASLSSL, SASL: settings, TLS: t})
	}
	// The authorizer, with admin its super user and what no ACL covers open to all: the
	// PLAINTEXT and SSL listeners serve as without it, and an ACL a person adds decides
	// its resource.
	opts.Config.Authz = broker.AuthzConfig{Enabled: true, ClassName: "sluice",
		SuperUsers: []string{"User:" + devSASLUser}, AllowIfNoACL: true}
	return d, nil
}

// writeOAuth draws an ES256 key, writes its JWKS (returned) and a token for admin,
// valid a day, to dir.
func (d *devSASL) writeOAuth(dir string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	set, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &key.PublicKey, KeyID: "dev", Algorithm: string(jose.ES256), Use: "sig"}}})
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "dev"))
	if err != nil {
		return "", err
	}
	now := time.Now()
	token, err := jwt.Signed(signer).Claims(jwt.Claims{Subject: devSASLUser,
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(24 * time.Hour)),
	}).Serialize()
	if err != nil {
		return "", err
	}
	jwks := filepath.Join(dir, "jwks.json")
	d.tokenFile = filepath.Join(dir, "oauth-token")
	if err := os.WriteFile(jwks, set, 0o600); err != nil {
		return "", err
	}
	return jwks, os.WriteFile(d.tokenFile, []byte(token+"\n"), 0o600)
}

// createSCRAMUser gives admin its SCRAM credentials, through the PLAINTEXT listener.
func (d *devSASL) createSCRAMUser(plain string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(plain))
	if err != nil {
		return err
	}
	defer cl.Close()
	var ups []kadm.UpsertSCRAM
	for _, m := range []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512} {
		ups = append(ups, kadm.UpsertSCRAM{User: devSASLUser, Mechanism: m,
			Iterations: 8192, Password: d.password})
	}
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, ups)
	if err == nil {
		err = res[devSASLUser].Err
	}
	return err
}

// banner says how to connect with SASL, through SASL_PLAINTEXT when there is one, else
// SASL_SSL; and how to make a second user and deny it a topic, through PLAINTEXT.
func (d *devSASL) banner(b *strings.Builder, n *runtime.Node, ca string) {
	fmt.Fprintf(b, "\nSASL: user %s, password %s (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)\n",
		devSASLUser, d.password)
	var kcat []string
	var bootstrap string // the sluice commands' --bootstrap and TLS flags
	user := fmt.Sprintf("-X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=%s "+
		"-X sasl.password=%s -L", devSASLUser, d.password)
	if d.ssl {
		ss := n.ListenerAddr("SASL_SSL")
		fmt.Fprintf(b, "  SASL_SSL        %s\n", ss)
		kcat = append(kcat, fmt.Sprintf("kcat -b %s -X security.protocol=SASL_SSL "+
			"-X ssl.ca.location=%s %s", ss, ca, user))
		bootstrap = fmt.Sprintf("%s --tls-ca %s", ss, ca)
	}
	if d.plain {
		sp := n.ListenerAddr("SASL_PLAINTEXT")
		fmt.Fprintf(b, "  SASL_PLAINTEXT  %s\n", sp)
		kcat = append(kcat, fmt.Sprintf("kcat -b %s -X security.protocol=SASL_PLAINTEXT %s",
			sp, user))
		bootstrap = sp
	}
	fmt.Fprintf(b, "kcat:\n  %s\n", strings.Join(kcat, "\n  "))
	fmt.Fprintf(b, "sluice:\n  SLUICE_SASL_PASSWORD=%s sluice topic list --bootstrap %s "+
		"--sasl-mechanism SCRAM-SHA-512 --sasl-user %s\n", d.password, bootstrap, devSASLUser)
	plain := n.ListenerAddr("PLAINTEXT")
	fmt.Fprintf(b, "ACLs are checked (super.users=User:%s; a resource without ACLs is open "+
		"to all, one with ACLs to those they allow). A second user, denied topic secret:\n"+
		"  SLUICE_USER_PASSWORD=bob-secret sluice user create bob --bootstrap %s\n"+
		"  sluice acl add --deny-principal User:bob --operation all --topic secret "+
		"--bootstrap %s\n", devSASLUser, plain, plain)
	fmt.Fprintf(b, "OAUTHBEARER (a token for %s, valid 24 h, signed by the JWKS beside it):\n"+
		"  sluice topic list --bootstrap %s --sasl-mechanism OAUTHBEARER "+
		"--sasl-token-file %s\n", devSASLUser, bootstrap, d.tokenFile)
}
