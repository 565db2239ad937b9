package e2e

import (
	"crypto/sha512"
	"crypto/tls"
	"fmt"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/xdg-go/scram"
)

// saramaSCRAM adapts xdg-go/scram's client to sarama's SCRAMClient.
type saramaSCRAM struct {
	conv *scram.ClientConversation
}

func (s *saramaSCRAM) Begin(user, password, authzID string) error {
	cl, err := scram.HashGeneratorFcn(sha512.New).NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	s.conv = cl.NewConversation()
	return nil
}

func (s *saramaSCRAM) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *saramaSCRAM) Done() bool                            { return s.conv.Done() }

// Sarama authenticates with its default SASL framing, SaslHandshake v0 then bare tokens
// (PLAIN), and with SaslHandshake v1 and SaslAuthenticate (SCRAM-SHA-512), and
// produces; a wrong password is refused.
func TestSaramaSASL(t *testing.T) {
	s := startSASLNode(t, "")
	s.createBob(t)
	for _, tc := range []struct {
		name     string
		mech     sarama.SASLMechanism
		version  int16
		user, pw string
		ok       bool
	}{
		{"plain-v0", sarama.SASLTypePlaintext, sarama.SASLHandshakeV0, "alice", alicePassword, true},
		{"scram512-v1", sarama.SASLTypeSCRAMSHA512, sarama.SASLHandshakeV1, "bob", bobPassword, true},
		{"scram512-v0", sarama.SASLTypeSCRAMSHA512, sarama.SASLHandshakeV0, "bob", bobPassword, true},
		{"wrong-password", sarama.SASLTypePlaintext, sarama.SASLHandshakeV1, "alice", "nope", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := saramaConfig()
			c.Net.SASL.Enable = true
			c.Net.SASL.Mechanism, c.Net.SASL.Version = tc.mech, tc.version
			c.Net.SASL.User, c.Net.SASL.Password = tc.user, tc.pw
			// Sarama sends no ApiVersions with the v0 framing (it would precede the
			// handshake, which its v0 flow does not expect).
			c.ApiVersionsRequest = tc.version != sarama.SASLHandshakeV0
			c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient {
				return &saramaSCRAM{}
			}
			c.Producer.Return.Successes = true
			c.Metadata.Retry.Max = 1
			p, err := sarama.NewSyncProducer([]string{s.saslPlain}, c)
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			defer p.Close()
			_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: "sarama-sasl",
				Value: sarama.StringEncoder(tc.name)})
			require.NoError(t, err)
		})
	}
}

// Sarama over TLS: on the SSL listener with a client certificate, and on the SASL_SSL
// listener with SCRAM-SHA-512, it produces and reads back what it produced; a wrong
// password over SASL_SSL is refused, and the node serves the next client.
func TestSaramaOverTLS(t *testing.T) {
	s := startSASLNode(t, "")
	s.createBob(t)
	cert, err := tls.LoadX509KeyPair(s.certs.ClientCert, s.certs.ClientKey)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, addr string
		cert       bool
		pw         string // SCRAM-SHA-512 as bob; "": no SASL
		ok         bool
	}{
		{"ssl", s.ssl, true, "", true},
		{"sasl-ssl-scram512", s.saslSSL, false, bobPassword, true},
		{"sasl-ssl-wrong-password", s.saslSSL, false, "nope", false},
		{"sasl-ssl-after-refusal", s.saslSSL, false, bobPassword, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := saramaConfig()
			c.Net.TLS.Enable, c.Net.TLS.Config = true, s.tlsConfig(t)
			if tc.cert {
				c.Net.TLS.Config.Certificates = []tls.Certificate{cert}
			}
			if tc.pw != "" {
				c.Net.SASL.Enable, c.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA512
				c.Net.SASL.User, c.Net.SASL.Password = "bob", tc.pw
				c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient {
					return &saramaSCRAM{}
				}
			}
			c.Producer.Return.Successes = true
			c.Producer.Partitioner = sarama.NewManualPartitioner
			c.Metadata.Retry.Max = 1
			p, err := sarama.NewSyncProducer([]string{tc.addr}, c)
			if !tc.ok {
				require.ErrorContains(t, err, "SASL")
				return
			}
			require.NoError(t, err)
			defer p.Close()
			topic := "sarama-" + tc.name
			for i := range 3 {
				_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic,
					Value: sarama.StringEncoder(fmt.Sprint(i))})
				require.NoError(t, err)
			}
			cons, err := sarama.NewConsumer([]string{tc.addr}, c)
			require.NoError(t, err)
			defer cons.Close()
			var vals []string
			for _, m := range saramaReadPartition(t, cons, topic, 0) {
				vals = append(vals, m.val)
			}
			require.Equal(t, []string{"0", "1", "2"}, vals)
		})
	}
}
