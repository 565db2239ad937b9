package runtime

import (
	"time"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/controller"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// Options configure a Node. Zero values take the defaults named on each field.
type Options struct {
	// ListenAddr is host:port to accept Kafka clients on; port 0 picks a free port
	// (Node.Addr tells which). Default 127.0.0.1:9092.
	ListenAddr string
	// AdvertisedAddr is host:port clients are told to connect to (Metadata). Default:
	// the address actually listened on.
	AdvertisedAddr string
	// Listeners, when set, replace ListenAddr and AdvertisedAddr: the node's named
	// listeners (listeners, advertised.listeners, listener.security.protocol.map;
	// docs/security.md). Requests carry the name of the listener they arrived on, and
	// Metadata answers with each broker's address on that listener.
	Listeners []Listener
	// InterBrokerListener names the listener peers use (inter.broker.listener.name):
	// its advertised address is the one the node registers with the controller, and
	// the node reaches its peers with that listener's protocol. Default: the first
	// listener.
	InterBrokerListener string
	// DataDir holds the partition logs and the node's state. Default ./data.
	DataDir string
	// MarksDir is a tmpfs directory for marks that must outlive the process but not the
	// machine's page cache (disk.VolatileMarks: a failed fsync's taint). Default
	// /dev/shm when it exists; "-" turns the marks off.
	MarksDir string
	// Config is the broker's configuration. A zero Config (no TopicDefaults) means
	// broker.DefaultConfig(). AdvertisedHost and AdvertisedPort are overwritten from
	// AdvertisedAddr.
	Config broker.Config
	// Logger receives the node's logs. Default: none.
	Logger *zap.Logger

	// DrainTimeout bounds how long Close waits for answers to requests already read
	// (a long-polling fetch answers at its max wait). Default 5s.
	DrainTimeout time.Duration
	// SyncWorkers is the number of goroutines running fsyncs. Default 4.
	SyncWorkers int
	// InboxSize bounds the inputs waiting for the event loop; connection readers block
	// when it is full. Default 4096.
	InboxSize int
	// MaxRequestBytes is the largest request frame (socket.request.max.bytes). Default
	// 100 MiB. When set, it overrides Net.MaxRequestBytes.
	MaxRequestBytes int
	// Net are the connection and request limits of the wire server (docs/limits.md,
	// "Connections and requests"); its Logger is the node's. Zero values take
	// kafkanet.Options' defaults. Net.MaxConns (max.connections, default 10000) is
	// lowered at start when the open-file limit cannot hold it (fds.go).
	Net kafkanet.Options
	// Peers are the other nodes' Kafka addresses by node id, for inter-broker requests
	// (Env.SendPeer); PeerOptions bound that client (docs/limits.md).
	Peers       map[int32]string
	PeerOptions kafkanet.PeerOptions
	// Voters, when set, makes the node's metadata log a raft quorum of these voters
	// (runtime/raftmeta, docs/quorum.md) instead of its own log in the state store.
	// ControllerListen is where this node's raft transport listens (default: its voter
	// address). QuorumTiming zero: raftmeta.DefaultTiming().
	Voters           []raftmeta.Voter
	ControllerListen string
	QuorumTiming     raftmeta.Timing
	// ControllerTLS, when set, makes the quorum transport TLS with mutual
	// authentication (controller.listener.names naming an SSL listener; docs/quorum.md,
	// "Transport"): its keystore is this node's certificate, towards peers too, its
	// truststore the CAs a peer's certificate must chain to; ssl.client.auth is
	// always required. Nil: plaintext.
	ControllerTLS *kafkanet.TLSSettings
	// Controller holds the controller's settings (broker.session.timeout.ms, ...); its
	// NodeID and ClusterID come from Config. Zero: controller.DefaultConfig(). Rack is
	// this node's rack (broker.rack), given to the controller at registration.
	Controller controller.Config
	Rack       string
	// OnFatal is called, once, when the node can no longer serve correctly and must be
	// restarted (the metadata quorum stopped delivering). Default: log and close.
	OnFatal func(error)
	// HTTPListen is host:port for the operator endpoints: /healthz, /readyz and
	// /metrics (Prometheus). Empty: none (the default here; `sluice node` listens on
	// 127.0.0.1:9644 unless told --http-listen "").
	HTTPListen string
	// ConsoleAdmin lets the web console on HTTPListen create topics, alter configs and
	// reset group offsets (`--console-admin`); without it the console is read-only.
	ConsoleAdmin bool
	// SlowRequest is sluice.request.slow.log.ms: a request answered later than this is
	// logged with its stages (slowlog.go). Zero: no slow-request log (the default here;
	// `sluice node` logs requests slower than 1 s).
	SlowRequest time.Duration
	// MaxOpenLogFiles bounds the partition log files held open at once
	// (sluice.log.max.open.files). Default: derived from the open-file limit.
	MaxOpenLogFiles int
}

// Listener is one named Kafka listener of a node.
type Listener struct {
	Name string // PLAINTEXT, SSL, INTERNAL, ...
	// Addr is host:port to listen on (port 0: a free one).
	Addr string
	// Advertised is host:port clients are told (advertised.listeners). Default: the
	// address actually listened on.
	Advertised string
	// Protocol is the listener's security protocol.
	Protocol kafkanet.Protocol
	// TLS are the listener's ssl.* settings (SSL): its key pair, truststore and client
	// authentication; peers use them as a client when this is the inter-broker listener.
	TLS kafkanet.TLSSettings
	// SASL are the listener's SASL settings (SASL_PLAINTEXT, SASL_SSL): its mechanisms
	// and PLAIN users; peers authenticate with them when this is the inter-broker
	// listener.
	SASL kafkanet.SASLSettings
}

func (o *Options) defaults() {
	if o.ListenAddr == "" {
		o.ListenAddr = "127.0.0.1:9092"
	}
	if len(o.Listeners) == 0 {
		o.Listeners = []Listener{{Name: string(kafkanet.Plaintext), Addr: o.ListenAddr,
			Advertised: o.AdvertisedAddr, Protocol: kafkanet.Plaintext}}
	}
	if o.InterBrokerListener == "" {
		o.InterBrokerListener = o.Listeners[0].Name
	}
	if o.DataDir == "" {
		o.DataDir = "data"
	}
	if o.Controller == (controller.Config{}) {
		o.Controller = controller.DefaultConfig()
	}
	if o.Config.TopicDefaults == nil {
		o.Config = broker.DefaultConfig()
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 5 * time.Second
	}
	if o.SyncWorkers <= 0 {
		o.SyncWorkers = 4
	}
	if o.Net.MaxConns <= 0 {
		o.Net.MaxConns = 10000
	}
	if o.InboxSize <= 0 {
		o.InboxSize = 4096
	}
}
