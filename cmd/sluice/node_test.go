package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.properties")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

func TestNodeConfigFileAppliesSettings(t *testing.T) {
	path := writeConfig(t, `# a comment
! another comment

node.id = 7
num.partitions=5
log.retention.ms=1000
listeners=PLAINTEXT://127.0.0.1:19093
advertised.listeners=broker.example:19093
log.dirs=/var/lib/sluice
connections.max.idle.ms=1500
max.connections.per.ip=20
max.connections.per.ip.overrides=127.0.0.2:200
`)
	cfg := broker.DefaultConfig()
	var ns nodeSettings
	require.NoError(t, loadConfigFile(path, &cfg, &ns))
	require.Equal(t, int32(7), cfg.NodeID)
	require.Equal(t, int32(5), cfg.NumPartitions)
	require.Equal(t, "1000", cfg.TopicDefaults["retention.ms"])
	require.Equal(t, nodeSettings{lst: listenerSettings{
		listeners:  "PLAINTEXT://127.0.0.1:19093",
		advertised: "PLAINTEXT://broker.example:19093"},
		data: "/var/lib/sluice", net: kafkanet.Options{IdleTimeout: 1500 * time.Millisecond,
			MaxConnsPerIP: 20, MaxConnsPerIPOverrides: map[string]int{"127.0.0.2": 200}}}, ns)
}

func TestNodeConfigFileErrorsNameTheLine(t *testing.T) {
	for text, want := range map[string]string{
		"num.partitions=3\n\nretention.msx=5\n": `line 3: unknown setting "retention.msx"`,
		"num.partitions\n":                      `line 1: expected key=value, got "num.partitions"`,
		"num.partitions=zero\n": `line 1: num.partitions: "zero" is not an integer ` +
			`(range [1, 2^31-1])`,
		"num.partitions=0\n": `line 1: num.partitions: 0 is outside its range [1, 2^31-1]`,
		"log.flush.policy=sometimes\n": `line 1: log.flush.policy: "sometimes" is not one of ` +
			`always, never`,
		"broker.session.timeout.ms=-5\n": `line 1: broker.session.timeout.ms: -5 is outside`,
		"listener.security.protocol.map=A:KERBEROS\n": `line 1: listener.security.protocol.map: ` +
			`unknown security protocol "KERBEROS"`,
		"ssl.keystore.type=JKS\n": `line 1: ssl.keystore.type: "JKS" is not one of PEM`,
		"listener.name.ssl.ssl.client.auth=yes\n": `line 1: listener.name.ssl.ssl.client.auth: ` +
			`ssl.client.auth: "yes" is not one of none, requested, required`,
		"listener.name.ssl.log.dirs=/x\n": `line 1: listener.name.ssl.log.dirs: ` +
			`only ssl.* settings and sasl.enabled.mechanisms can be given per listener`,
		"log.dirs=/a,/b\n": `line 1: log.dirs: Sluice keeps its data in one`,
		"max.connections.per.ip=0\n": `line 1: max.connections.per.ip: 0 is outside its ` +
			`range [1, 2^31-1]`,
	} {
		path := writeConfig(t, text)
		cfg := broker.DefaultConfig()
		err := loadConfigFile(path, &cfg, &nodeSettings{})
		require.ErrorContains(t, err, "config file "+path+" "+want)
	}
}

func TestNodeCommandReportsBadConfigAndFlags(t *testing.T) {
	var stderr bytes.Buffer
	path := writeConfig(t, "bogus=1\n")
	code := run([]string{"node", "--config", path}, nil, &stderr, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), `line 1: unknown setting "bogus"`)

	stderr.Reset()
	require.Equal(t, 2, run([]string{"node", "--id", "-3"}, nil, &stderr, &stderr))
	require.Contains(t, stderr.String(), "--id must be between 0 and 2147483647")

	stderr.Reset()
	require.Equal(t, 2, run([]string{"node", "--voters", "1:127.0.0.1:9093"}, nil, &stderr,
		&stderr))
	require.Contains(t, stderr.String(), "--voters: voter \"1:127.0.0.1:9093\": want id@host:port")

	stderr.Reset()
	require.Equal(t, 2, run([]string{"node", "--controller-listen", "127.0.0.1:9093"}, nil,
		&stderr, &stderr))
	require.Contains(t, stderr.String(), "sluice node: --controller-listen needs --voters")

	stderr.Reset()
	require.Equal(t, 2, run([]string{"node", "--data", t.TempDir(), "--listen", "127.0.0.1:0",
		"--voters", "1@127.0.0.1:9093,2@127.0.0.1:9093"}, nil, &stderr, &stderr))
	require.Contains(t, stderr.String(), "voter address 127.0.0.1:9093 given twice")

	stderr.Reset()
	require.Equal(t, 2, run([]string{"node", "--id", "2", "--data", t.TempDir(),
		"--listen", "127.0.0.1:0", "--controller-listen", "127.0.0.1:9195",
		"--voters", "1@127.0.0.1:9193,2@127.0.0.1:9194"}, nil, &stderr, &stderr))
	require.Contains(t, stderr.String(), "sluice node: node 2 is voter 2@127.0.0.1:9194 in "+
		"--voters, but --controller-listen is 127.0.0.1:9195")

	stderr.Reset()
	require.Equal(t, 2, run([]string{"node", "stray"}, nil, &stderr, &stderr))
	require.Contains(t, stderr.String(), `unexpected argument "stray"`)

	stderr.Reset()
	code = run([]string{"node", "--listen", "127.0.0.1:0", "--advertise", "0.0.0.0:9092",
		"--data", t.TempDir()}, nil, &stderr, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "cannot connect to an unspecified host")
}

// Settings that bound each other are checked once the whole file is read, so their
// order in it does not matter; a bad pair is still refused, naming both.
func TestNodeControllerSettingsInAnyOrder(t *testing.T) {
	path := writeConfig(t, "broker.heartbeat.interval.ms=10000\nbroker.session.timeout.ms=30000\n")
	cfg := broker.DefaultConfig()
	ns := nodeSettings{ctl: controller.DefaultConfig()}
	require.NoError(t, loadConfigFile(path, &cfg, &ns))
	require.NoError(t, ns.ctl.Check())
	require.Equal(t, int64(30000), ns.ctl.SessionTimeoutMs)

	path = writeConfig(t, "broker.heartbeat.interval.ms=10000\n")
	ns = nodeSettings{ctl: controller.DefaultConfig()}
	require.NoError(t, loadConfigFile(path, &cfg, &ns))
	require.ErrorContains(t, ns.ctl.Check(), "must be below broker.session.timeout.ms (9000)")
}

// Kafka's listener settings: custom names mapped to protocols, per-listener ssl.*
// overrides, advertised addresses by name, the inter-broker listener; --listen and
// --advertise remain one PLAINTEXT listener.
func TestNodeListenerSettings(t *testing.T) {
	path := writeConfig(t, `listeners=INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:9093
advertised.listeners=EXTERNAL://kafka.example:9093
listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:SSL
inter.broker.listener.name=INTERNAL
ssl.keystore.location=/etc/sluice/server.pem
ssl.client.auth=requested
listener.name.external.ssl.client.auth=required
`)
	cfg := broker.DefaultConfig()
	var ns nodeSettings
	require.NoError(t, loadConfigFile(path, &cfg, &ns))
	ls, ib, err := ns.lst.build("127.0.0.1:9092", "")
	require.NoError(t, err)
	require.Equal(t, "INTERNAL", ib)
	require.Len(t, ls, 2)
	require.Equal(t, "INTERNAL", ls[0].Name)
	require.Equal(t, kafkanet.Plaintext, ls[0].Protocol)
	require.Equal(t, "", ls[0].Advertised)
	require.Equal(t, kafkanet.SSL, ls[1].Protocol)
	require.Equal(t, "kafka.example:9093", ls[1].Advertised)
	require.Equal(t, "/etc/sluice/server.pem", ls[1].TLS.KeystoreLocation)
	require.Equal(t, "required", ls[1].TLS.ClientAuth)
	require.Equal(t, "requested", ls[0].TLS.ClientAuth, "overrides stay with their listener")

	var plain listenerSettings
	ls, ib, err = plain.build("127.0.0.1:9092", "example:9092")
	require.NoError(t, err)
	require.Equal(t, "", ib)
	require.Equal(t, []runtime.Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:9092",
		Advertised: "example:9092", Protocol: kafkanet.Plaintext}}, ls)

	for _, tc := range []struct{ text, want string }{
		{"listeners=CUSTOM://127.0.0.1:1\n", "listener CUSTOM has no security protocol"},
		{"listeners=PLAINTEXT://127.0.0.1:1\nadvertised.listeners=SSL://h:1\n",
			"SSL is not one of the listeners"},
		{"listeners=PLAINTEXT://127.0.0.1:1\ninter.broker.listener.name=X\n",
			"inter.broker.listener.name X is not one of the listeners"},
	} {
		var ns nodeSettings
		require.NoError(t, loadConfigFile(writeConfig(t, tc.text), &cfg, &ns))
		_, _, err := ns.lst.build("", "")
		require.ErrorContains(t, err, tc.want)
	}
}

// TestNodeControllerListenerTLS: controller.listener.names names the listener whose
// ssl.* settings the quorum transport takes (per-listener ones over the common ones);
// a Kafka-style CONTROLLER name that is no Kafka listener works, PLAINTEXT or no name
// means plaintext, and a SASL or unmapped name is refused.
func TestNodeControllerListenerTLS(t *testing.T) {
	cfg := broker.DefaultConfig()
	var ns nodeSettings
	require.NoError(t, loadConfigFile(writeConfig(t, `listeners=PLAINTEXT://127.0.0.1:0
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL
controller.listener.names=CONTROLLER
ssl.truststore.location=/etc/sluice/ca.pem
listener.name.controller.ssl.keystore.location=/etc/sluice/quorum.pem
`), &cfg, &ns))
	got, err := ns.lst.controllerTLS()
	require.NoError(t, err)
	require.NotNil(t, got)
	require.Equal(t, "/etc/sluice/quorum.pem", got.KeystoreLocation)
	require.Equal(t, "/etc/sluice/ca.pem", got.TruststoreLocation)

	var none listenerSettings
	got, err = none.controllerTLS()
	require.NoError(t, err)
	require.Nil(t, got)

	for _, tc := range []struct{ text, want string }{
		{"controller.listener.names=PLAINTEXT\n", ""},
		{"controller.listener.names=CONTROLLER\n", "CONTROLLER has no security protocol"},
		{"controller.listener.names=SASL_SSL\n", "PLAINTEXT or SSL"},
		{"controller.listener.names=SSL,CONTROLLER\n", "one listener name"},
	} {
		var ns nodeSettings
		require.NoError(t, loadConfigFile(writeConfig(t, tc.text), &cfg, &ns))
		got, err := ns.lst.controllerTLS()
		if tc.want == "" {
			require.NoError(t, err)
			require.Nil(t, got)
			continue
		}
		require.ErrorContains(t, err, tc.want)
	}
}

func TestVoterListenMismatch(t *testing.T) {
	vs := []raftmeta.Voter{{ID: 1, Addr: "10.0.0.1:9093"}, {ID: 2, Addr: "10.0.0.2:9093"}}
	require.Empty(t, voterListenMismatch(vs, 2, ""), "no --controller-listen: the voter's")
	require.Empty(t, voterListenMismatch(vs, 2, "10.0.0.2:9093"))
	require.Empty(t, voterListenMismatch(vs, 2, "0.0.0.0:9093"), "every address, same port")
	require.Empty(t, voterListenMismatch(vs, 4, "10.0.0.4:9093"), "a non-voter's own")
	require.NotEmpty(t, voterListenMismatch(vs, 2, "10.0.0.2:9094"), "another port")
	require.NotEmpty(t, voterListenMismatch(vs, 2, "10.0.0.9:9093"), "another host")
	require.NotEmpty(t, voterListenMismatch(vs, 2, "garbage"))
}

// A node runs the collector at nodeGCPercent unless GOGC is set, which wins.
func TestNodeGCPercentUnlessGOGCIsSet(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	setGCPercent(func(string) string { return "" })
	require.Equal(t, nodeGCPercent, debug.SetGCPercent(100))
	setGCPercent(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	})
	require.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: left as the runtime read it")
}
