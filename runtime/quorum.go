package runtime

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/disk"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// raftKeys is the state-store prefix of the raft log and stable store (disk/raftstore).
var raftKeys = []byte("raft/")

// openMetadata opens the node's metadata log and returns the Start to step the broker
// with: the node's own log in the state store (no voters, as always), or a raft quorum
// (Options.Voters). A data directory keeps the kind it was created with: switching
// would start from an empty log and forget every topic, so either way is refused.
func (n *Node) openMetadata() (broker.Start, error) {
	_, _, hasRaft, err := n.state.First(raftKeys)
	if err != nil {
		return broker.Start{}, fmt.Errorf("read the state store: %w", err)
	}
	if n.metaLog, err = disk.NewMetaLog(n.state); err != nil {
		return broker.Start{}, fmt.Errorf("open metadata log: %w", err)
	}
	committed, err := n.metaLog.Load()
	if err != nil {
		return broker.Start{}, fmt.Errorf("load metadata log: %w", err)
	}
	if len(n.opts.Voters) == 0 {
		if hasRaft {
			return broker.Start{}, fmt.Errorf("data directory %s belongs to a metadata "+
				"quorum: start the node with the --voters it was created with",
				n.opts.DataDir)
		}
		n.metaW = newMetaWriter(n.metaLog, n.deliverCompletion)
		return broker.Start{Snapshot: committed.Snapshot,
			SnapshotIndex: committed.SnapshotIndex, Records: committed.Records}, nil
	}
	if held := committed.SnapshotIndex + uint64(len(committed.Records)); held > 0 {
		return broker.Start{}, fmt.Errorf("data directory %s holds a single node's "+
			"metadata (%d records): start it without --voters", n.opts.DataDir, held)
	}
	return n.openQuorum()
}

// openQuorum opens the raft adapter over the node's state store; Start runs it once
// the event loop is up.
func (n *Node) openQuorum() (broker.Start, error) {
	timing := n.opts.QuorumTiming
	if timing == (raftmeta.Timing{}) {
		timing = raftmeta.DefaultTiming()
	}
	cfg := raftmeta.Config{
		NodeID: n.opts.Config.NodeID, Voters: n.opts.Voters, Bind: n.opts.ControllerListen,
		State: n.state, SnapshotDir: filepath.Join(n.opts.DataDir, "raft-snapshots"),
		Logger: n.lg.Named("quorum"), Timing: timing, OnFatal: n.onFatal,
	}
	if st := n.opts.Controller.SessionTimeoutMs; st > 0 {
		// A node moved to a new address is refused while its old process's session
		// and the connection-loss grace run; one refused longer has a live twin.
		cfg.JoinInUseGiveUp = time.Duration(2*st)*time.Millisecond + 2*time.Second
	}
	if n.opts.ControllerTLS != nil {
		t, err := quorumTLS(*n.opts.ControllerTLS, &n.opts.Config.Authz,
			n.lg.Named("quorum-tls"))
		if err != nil {
			return broker.Start{}, err
		}
		cfg.TLS = t
	}
	if !n.isVoter() {
		// A non-voter joins the quorum at its --controller-listen address (raftmeta's
		// join.go); the voters dial it there.
		cfg.Addr = n.opts.ControllerListen
	}
	m, start, err := raftmeta.Open(cfg)
	if err != nil {
		return broker.Start{}, err
	}
	n.quorum = m
	n.lg.Info("metadata quorum", zap.Int("voters", len(n.opts.Voters)),
		zap.Bool("voter", n.isVoter()), zap.Bool("tls", cfg.TLS != nil),
		zap.String("controller_listen", m.Addr()), zap.Uint64("records", start.LastIndex()))
	return start, nil
}

// quorumTLS builds the quorum transport's TLS from the controller listener's ssl.*
// settings: client certificates are always required and verified, and the keystore,
// re-read when its file changes, is presented both ways, so a renewed certificate is
// used by every new quorum connection. Without an authorizer a quorum member is whoever
// holds a certificate the truststore accepts; with one, its principal must also be a
// super user or this node's own (quorumPeerAllowed).
func quorumTLS(s kafkanet.TLSSettings, authz *broker.AuthzConfig,
	lg *zap.Logger) (*raftmeta.TransportTLS, error) {
	if s.TruststoreLocation == "" && s.TruststoreCerts == "" {
		return nil, fmt.Errorf("the controller listener (quorum transport) needs " +
			"ssl.truststore.location: the CA that signs every quorum member's certificate")
	}
	s.ClientAuth = "required"
	srv, err := s.ServerConfig(lg)
	if err != nil {
		return nil, fmt.Errorf("the controller listener (quorum transport): %w", err)
	}
	cli, err := s.ClientConfig(lg)
	if err != nil {
		return nil, fmt.Errorf("the controller listener (quorum transport): %w", err)
	}
	t := &raftmeta.TransportTLS{Server: srv, Client: cli}
	if authz.Enabled {
		t.PeerAllowed = quorumPeerAllowed(authz.SuperUsers, cli)
	}
	return t, nil
}

// quorumPeerAllowed admits a quorum peer whose certificate's principal (Kafka's DEFAULT
// mapping, as on an SSL listener) is one of superUsers or the principal of the
// certificate this node presents (cli's, read at each connection: a renewed keystore
// counts), as Kafka's authorizer lets only super users act on a controller listener
// until it has loaded the ACLs. Nodes that share one certificate need no super.users
// entry; nodes with certificates of their own list theirs.
func quorumPeerAllowed(superUsers []string, cli *tls.Config) func(*x509.Certificate) bool {
	return func(leaf *x509.Certificate) bool {
		p := kafkanet.PrincipalOf(leaf)
		return slices.Contains(superUsers, p) || p == ownPrincipal(cli)
	}
}

// isVoter says whether this node is one of Options.Voters (else a non-voter: it follows
// the metadata log and never votes).
func (n *Node) isVoter() bool {
	for _, v := range n.opts.Voters {
		if v.ID == n.opts.Config.NodeID {
			return true
		}
	}
	return false
}

// awaitQuorumLeader waits, before clients are let in, until the quorum has a leader,
// at most twenty election timeouts: a metadata change proposed earlier would only be
// refused. A quorum that elects none by then (most voters down) does not keep the node
// from serving what it has; such changes are answered with retriable errors.
func (n *Node) awaitQuorumLeader(ctx context.Context) {
	timing := n.opts.QuorumTiming
	if timing == (raftmeta.Timing{}) {
		timing = raftmeta.DefaultTiming()
	}
	deadline := time.Now().Add(20 * timing.Election)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if leader, _ := n.quorum.Leader(); leader >= 0 || n.failed.Load() {
			return
		}
		time.Sleep(10 * time.Millisecond) // bounded by the deadline above
	}
	leader, term := n.quorum.Leader()
	n.lg.Warn("serving without a metadata quorum leader; metadata changes fail until "+
		"one is elected", zap.Int32("leader", leader), zap.Uint64("term", term))
}

// onFatal ends a node that can no longer serve correctly: Options.OnFatal decides
// what happens (the command exits non-zero so a supervisor restarts it); by default
// the node closes.
func (n *Node) onFatal(err error) {
	n.fatal.Do(func() {
		n.failed.Store(true)
		n.lg.Error("the node must restart", zap.Error(err))
		if n.opts.OnFatal != nil {
			n.opts.OnFatal(err)
			return
		}
		go func() { _ = n.Close() }()
	})
}

// QuorumAddr is where the node's metadata quorum transport listens ("" without one).
func (n *Node) QuorumAddr() string {
	if n.quorum == nil {
		return ""
	}
	return n.quorum.Addr()
}
