package main

// `sluice dev --sasl`: SASL listeners on the throw-away node, with one user, admin,
// whose password is drawn at start and printed: PLAIN (from a users file in the
// temporary directory) and SCRAM-SHA-256/512 (created through the PLAINTEXT listener
// once the node serves); and OAUTHBEARER, against a JWKS of a key drawn at start, with
// a token for admin valid a day written beside it.

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
	ssl       bool   // a SASL_SSL listener too (--tls)
	tokenFile string // admin's OAUTHBEARER token
}

// addDevSASL adds a SASL_PLAINTEXT listener at addr, and with TLS (tls set: the SSL
// listener's settings) a SASL_SSL one at sslAddr, both with PLAIN and SCRAM.
func addDevSASL(opts *runtime.Options, tmp, addr, sslAddr string,
	tls *runtime.Listener) (*devSASL, error) {
	var pw [12]byte
	_, _ = rand.Read(pw[:])
	d := &devSASL{password: hex.EncodeToString(pw[:]), ssl: tls != nil}
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
	opts.Listeners = append(opts.Listeners, runtime.Listener{Name: "SASL_PLAINTEXT",
		Addr: addr, Protocol: kafkanet.SASLPlaintext, SASL: settings})
	if tls != nil {
		opts.Listeners = append(opts.Listeners, runtime.Listener{Name: "SASL_SSL",
			Addr: sslAddr, Protocol: kafkanet.SASLSSL, SASL: settings, TLS: tls.TLS})
	}
	// The authorizer, with admin its super user and what no ACL covers open to all: the
	// dev node serves as before, and an ACL a person adds decides its resource.
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

// banner says how to connect with SASL.
func (d *devSASL) banner(b *strings.Builder, n *runtime.Node, ca string) {
	sp := n.ListenerAddr("SASL_PLAINTEXT")
	fmt.Fprintf(b, "\nSASL: user %s, password %s (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)\n"+
		"  SASL_PLAINTEXT  %s\n", devSASLUser, d.password, sp)
	if d.ssl {
		fmt.Fprintf(b, "  SASL_SSL        %s\n", n.ListenerAddr("SASL_SSL"))
	}
	fmt.Fprintf(b, "kcat:\n  kcat -b %s -X security.protocol=SASL_PLAINTEXT "+
		"-X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=%s -X sasl.password=%s -L\n",
		sp, devSASLUser, d.password)
	if d.ssl {
		fmt.Fprintf(b, "  kcat -b %s -X security.protocol=SASL_SSL -X ssl.ca.location=%s "+
			"-X sasl.mechanisms=SCRAM-SHA-512 -X sasl.username=%s -X sasl.password=%s -L\n",
			n.ListenerAddr("SASL_SSL"), ca, devSASLUser, d.password)
	}
	fmt.Fprintf(b, "sluice:\n  SLUICE_SASL_PASSWORD=%s sluice topic list --bootstrap %s "+
		"--sasl-mechanism SCRAM-SHA-512 --sasl-user %s\n", d.password, sp, devSASLUser)
	fmt.Fprintf(b, "ACLs are checked (super.users=User:%s; a resource without ACLs is open "+
		"to all):\n  sluice acl add --deny-principal User:ANONYMOUS --operation all "+
		"--topic secret\n", devSASLUser)
	fmt.Fprintf(b, "OAUTHBEARER (a token for %s, valid 24 h, signed by the JWKS beside it):\n"+
		"  sluice topic list --bootstrap %s --sasl-mechanism OAUTHBEARER "+
		"--sasl-token-file %s\n", devSASLUser, sp, d.tokenFile)
}
