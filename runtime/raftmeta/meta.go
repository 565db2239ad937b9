package raftmeta

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/disk/raftstore"
)

// Meta is one node's metadata quorum member: Open it (which builds the boot's Start),
// step the broker with that Start, then Run it with the node's delivery function;
// Propose is Env.ProposeMeta; Close ends the incarnation.
type Meta struct {
	cfg   Config
	lg    *zap.Logger
	hlog  hclog.Logger
	store *raftstore.Store
	logs  raft.LogStore
	snaps *raft.FileSnapshotStore
	trans *raft.NetworkTransport
	layer *joinLayer // the transport's listener, which also answers joins (join.go)
	start broker.Start

	out      *outbox
	fsm      *fsm
	r        *raft.Raft
	prop     *proposer
	watch    *watcher
	joinQuit chan struct{} // ends joinLoop (a non-voter's)
	joinDone chan struct{}
	gate     *voteGate     // a wiped voter's, until it caught up (wiped.go); nil: none
	gateQuit chan struct{} // ends awaitCatchUp
	gateDone chan struct{}
	fatalMu  sync.Once
	closeMu  sync.Once
	closeErr error
}

// Open opens the node's raft state, builds the Start the broker is stepped with first
// (M1), and listens on the transport address (a busy port fails here). Raft itself
// starts in Run.
func Open(cfg Config) (*Meta, broker.Start, error) {
	if err := cfg.check(); err != nil {
		return nil, broker.Start{}, fmt.Errorf("metadata quorum: %w", err)
	}
	m := &Meta{cfg: cfg, lg: cfg.Logger.Named("quorum")}
	m.hlog = newHCLog(m.lg)
	m.store = raftstore.New(cfg.State)
	logs, err := raft.NewLogCache(256, m.store)
	if err != nil {
		return nil, broker.Start{}, err
	}
	m.logs = logs
	if err := os.MkdirAll(cfg.SnapshotDir, 0o755); err != nil {
		return nil, broker.Start{}, fmt.Errorf("create the snapshot directory: %w", err)
	}
	if m.snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.SnapshotDir, 2,
		m.hlog.Named("snapshots")); err != nil {
		return nil, broker.Start{}, fmt.Errorf("open metadata snapshots: %w", err)
	}
	if m.start, err = loadStart(m.snaps, m.store, m.store, m.lg); err != nil {
		return nil, broker.Start{}, fmt.Errorf("load the metadata log: %w", err)
	}
	if err := m.listen(); err != nil {
		return nil, broker.Start{}, err
	}
	return m, m.start, nil
}

// listen starts the raft transport on Bind (default: Addr), advertising Addr.
func (m *Meta) listen() error {
	bind := m.cfg.Bind
	if bind == "" {
		bind = m.cfg.Addr
	}
	adv, err := net.ResolveTCPAddr("tcp", m.cfg.Addr)
	if err != nil {
		return fmt.Errorf("node %d transport address %q: %w", m.cfg.NodeID, m.cfg.Addr, err)
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return fmt.Errorf("metadata quorum: listen on %s: %w", bind, err)
	}
	m.layer = newJoinLayer(ln, adv, m.cfg.TLS, m.lg.Named("join"))
	m.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: m.layer, MaxPool: 3, Timeout: 10 * time.Second,
		Logger: m.hlog.Named("transport")})
	return nil
}

// Addr is the transport's address.
func (m *Meta) Addr() string { return string(m.trans.LocalAddr()) }

// Run starts raft. deliver receives every input of the incarnation after Start, one at
// a time: first MetaLeaderChanged{-1, ...} (M7), then MetaApplied, MetaAnswer and
// MetaLeaderChanged as they come; it returns false once the node takes no more.
func (m *Meta) Run(deliver func(broker.Input) bool) error {
	m.out = newOutbox(deliver)
	term, err := m.store.GetUint64([]byte("CurrentTerm")) // raft's key for its term
	if err != nil && !errors.Is(err, raftstore.ErrKeyNotFound) {
		return err
	}
	m.watch = newWatcher(m.out)
	m.watch.report(-1, term)
	m.fsm = newFSM(m.lg, m.start.LastIndex())
	m.fsm.out, m.fsm.fatal = m.out, m.fail
	m.fsm.mark = func(ri, dense uint64) error { return writeMarker(m.store, ri, dense) }
	existing, err := raft.HasExistingState(m.logs, m.store, m.snaps)
	if err != nil {
		return err
	}
	var target uint64 // a wiped voter's: it votes once its log reaches this index
	if m.cfg.voter() != nil {
		if target, err = m.wipedTarget(existing); err != nil {
			return fmt.Errorf("check for a wiped voter: %w", err)
		}
	}
	var trans raft.Transport = m.trans
	if target > 0 {
		m.gate = newVoteGate(m.trans)
		trans = m.gate
		m.lg.Warn("quorum has a log: this voter's raft state is empty, it will not vote "+
			"until it has caught up", zap.Uint64("target_index", target))
	}
	if m.r, err = raft.NewRaft(m.raftConfig(), m.fsm, m.logs, m.store, m.snaps,
		trans); err != nil {
		if m.gate != nil {
			m.gate.stop()
		}
		return fmt.Errorf("start raft: %w", err)
	}
	if target > 0 {
		m.gateQuit, m.gateDone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(m.gateDone)
			m.awaitCatchUp(target, m.gateQuit)
		}()
	}
	if !existing && m.cfg.voter() != nil && target == 0 {
		if err := m.r.BootstrapCluster(m.configuration()).Error(); err != nil &&
			!errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("bootstrap the metadata quorum: %w", err)
		}
		m.lg.Info("bootstrapped the metadata quorum", zap.Any("voters", m.cfg.Voters))
	}
	m.watch.run(m.r, m.cfg.Timing.Heartbeat/2)
	m.prop = newProposer(m)
	serve := m.serveJoin
	m.layer.serve.Store(&serve)
	if m.cfg.voter() == nil {
		m.joinQuit, m.joinDone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(m.joinDone)
			m.joinLoop(m.joinQuit)
		}()
	}
	return nil
}

func (m *Meta) raftConfig() *raft.Config {
	c := raft.DefaultConfig()
	t := m.cfg.Timing
	c.LocalID = raft.ServerID(strconv.Itoa(int(m.cfg.NodeID)))
	c.HeartbeatTimeout, c.ElectionTimeout = t.Heartbeat, t.Election
	c.LeaderLeaseTimeout, c.CommitTimeout = t.LeaderLease, t.Commit
	c.SnapshotThreshold, c.TrailingLogs = t.SnapshotThreshold, t.TrailingLogs
	c.SnapshotInterval = t.SnapshotInterval
	c.Logger = m.hlog
	c.NoLegacyTelemetry = true
	return c
}

func (m *Meta) configuration() raft.Configuration {
	var c raft.Configuration
	for _, v := range m.cfg.Voters {
		c.Servers = append(c.Servers, raft.Server{Suffrage: raft.Voter,
			ID: raft.ServerID(strconv.Itoa(int(v.ID))), Address: raft.ServerAddress(v.Addr)})
	}
	return c
}

// Propose is Env.ProposeMeta: one MetaAnswer{Token: token} follows (M3).
func (m *Meta) Propose(rec meta.Record, token uint64) { m.prop.submit(rec, token) }

// Snapshot asks raft to snapshot the image now (it also does so on its own every
// SnapshotThreshold entries) and compact the log behind it.
func (m *Meta) Snapshot() error { return m.r.Snapshot().Error() }

// Leader is the current leader's node id (-1: none known) and the raft term.
func (m *Meta) Leader() (int32, uint64) {
	_, id := m.r.LeaderWithID()
	return nodeOf(id), m.r.CurrentTerm()
}

// AddNonvoter makes node id, whose transport listens on addr, follow the log without
// voting (a broker that is not a configured voter). Only the leader can; it returns
// once the configuration change committed, raft.ErrNotLeader elsewhere. Adding a node
// already in the configuration updates its address.
func (m *Meta) AddNonvoter(id int32, addr string, timeout time.Duration) error {
	return m.r.AddNonvoter(raft.ServerID(strconv.Itoa(int(id))), raft.ServerAddress(addr), 0,
		timeout).Error()
}

// Raft is the running raft node, for describing the quorum (configuration, stats).
func (m *Meta) Raft() *raft.Raft { return m.r }

// fail ends the incarnation's deliveries and tells the node (fsm.die).
func (m *Meta) fail(err error) {
	m.fatalMu.Do(func() {
		m.lg.Error("the metadata log cannot go on in this incarnation", zap.Error(err))
		m.out.end()
		if m.cfg.OnFatal != nil {
			go m.cfg.OnFatal(err) // it may Close, which waits for raft's FSM goroutine
		}
	})
}

// Close ends the incarnation: nothing more is delivered, raft shuts down (proposals in
// flight may commit or not, M6) and the transport closes. The state store stays open.
func (m *Meta) Close() error {
	m.closeMu.Do(func() {
		if m.out != nil {
			m.out.end()
		}
		var errs []error
		if m.joinQuit != nil {
			close(m.joinQuit) // ends a join in flight too
			<-m.joinDone
		}
		if m.gateQuit != nil {
			close(m.gateQuit)
			<-m.gateDone
		}
		if m.r != nil {
			errs = append(errs, m.r.Shutdown().Error())
		}
		if m.gate != nil {
			m.gate.stop()
		}
		if m.prop != nil {
			m.prop.stop()
		}
		if m.watch != nil {
			m.watch.stop()
		}
		if m.trans != nil {
			errs = append(errs, m.trans.Close())
		}
		m.closeErr = errors.Join(errs...)
	})
	return m.closeErr
}

// nodeOf reads a raft server id as a node id; -1 when none.
func nodeOf(id raft.ServerID) int32 {
	n, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

// RemoveNonvoter removes node id from the raft configuration when it is there without
// a vote (a broker unregistered for good); a voter is refused, an id not there is
// done already. Only the leader can; it returns once the change committed,
// raft.ErrNotLeader elsewhere.
func (m *Meta) RemoveNonvoter(id int32, timeout time.Duration) error {
	f := m.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	for _, s := range f.Configuration().Servers {
		if nodeOf(s.ID) != id {
			continue
		}
		if s.Suffrage == raft.Voter {
			return fmt.Errorf("node %d is a voter of the metadata quorum: it is not "+
				"removed", id)
		}
		return m.r.RemoveServer(s.ID, 0, timeout).Error()
	}
	return nil
}
