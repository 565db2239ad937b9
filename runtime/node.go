package runtime

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/compress"
	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/disk"
	kafkanet "github.com/sluicemq/sluice/net"
	"github.com/sluicemq/sluice/runtime/raftmeta"
)

// Node is one running Sluice node: the broker actor, its event loop, and the real I/O
// around it. Create it with NewNode, then Start; Close shuts it down.
type Node struct {
	opts Options
	lg   *zap.Logger

	clockStart time.Time // wall clock with a monotonic reading, taken at Start
	clockBase  int64     // clockStart in ns since the epoch
	lastNow    core.Time

	state   *disk.PebbleState
	files   *disk.FileCache // every partition log's segment files
	marks   *disk.DirMarks  // taint marks on tmpfs (nil: none)
	fds     fdBudget
	metaLog *disk.MetaLog
	srv     *kafkanet.Server
	replier *kafkanet.Replier // the loop's way to answer requests
	b       *broker.Broker

	inbox       chan inboxItem    // from connection readers: requests, closed connections
	queued      atomic.Int64      // inputs put in the inbox and not yet stepped
	stepMu      sync.Mutex        // held by whoever steps the broker: the loop or a reader
	completions chan broker.Input // from the sync pool and the metadata writer
	stopLoop    chan struct{}     // closed to end the event loop
	loopDone    chan struct{}
	stopping    chan struct{} // closed once helpers must stop delivering

	timers *timers
	fired  []uint64
	logs   map[core.TopicPartition]*nodeLog // open logs; owned by the loop
	syncer *syncer
	// cleaner runs log compaction (cleaner.go).
	cleaner *cleaner
	metaW   *metaWriter
	quorum  *raftmeta.Meta // the metadata log when Options.Voters is set (docs/quorum.md)
	reap    reaper         // unregistered brokers to remove from the quorum (unregister.go)
	fatal   sync.Once
	failed  atomic.Bool     // onFatal ran: the node must stop (awaitQuorumLeader gives up)
	peers   *kafkanet.Peers // the inter-broker client (Env.SendPeer)
	// peerTLSErr says why the inter-broker listener's TLS client config cannot be built.
	peerTLSErr error
	// creds are the SCRAM credentials SASL listeners authenticate against (scram.go).
	creds *scramStore
	cl    *cluster // the controller and lifecycle, with a quorum (cluster.go)
	// http serves /healthz, /readyz and /metrics on httpAddr (httpops.go); serving is
	// set once clients are let in.
	http     *http.Server
	httpAddr string
	serving  atomic.Bool
	flow     *flowMetrics    // what the steps do, for /metrics; nil without HTTPListen
	requests *requestMetrics // requests by API, version and error (net's observer)
	started  bool

	closeOnce sync.Once
	closeErr  error
	closed    chan struct{}
}

// NewNode returns a node that will run with opts once started.
func NewNode(opts Options) *Node {
	opts.defaults()
	n := &Node{
		opts:        opts,
		lg:          opts.Logger,
		inbox:       make(chan inboxItem, opts.InboxSize),
		completions: make(chan broker.Input, opts.InboxSize),
		stopLoop:    make(chan struct{}),
		loopDone:    make(chan struct{}),
		stopping:    make(chan struct{}),
		timers:      newTimers(),
		logs:        map[core.TopicPartition]*nodeLog{},
		closed:      make(chan struct{}),
		creds:       newScramStore(),
	}
	var obs observers
	if opts.HTTPListen != "" {
		n.flow, n.requests = newFlowMetrics(), newRequestMetrics()
		obs = append(obs, n.requests)
	}
	if opts.SlowRequest > 0 {
		slow := &slowLog{lg: opts.Logger, threshold: opts.SlowRequest, stages: n.flow != nil}
		if n.flow != nil {
			n.flow.slow = slow
		}
		obs = append(obs, slow)
	}
	switch len(obs) {
	case 0:
	case 1:
		n.opts.Net.Observer = obs[0]
	default:
		n.opts.Net.Observer = obs
	}
	po := opts.PeerOptions
	if po.Logger == nil {
		po.Logger = opts.Logger.Named("peers")
	}
	if po.TLS == nil {
		// An error is reported by Start, which cannot serve without the listener.
		po.TLS, n.peerTLSErr = opts.peerTLS(po.Logger)
	}
	if po.SASL == nil && n.peerTLSErr == nil {
		po.SASL, n.peerTLSErr = opts.peerSASL()
	}
	if po.ClientID == "" {
		po.ClientID = fmt.Sprintf("sluice-broker-%d", opts.Config.NodeID)
	}
	if po.LinkDown == nil {
		po.LinkDown = func(node int32) { n.deliverCompletion(broker.PeerLinkDown{Node: node}) }
	}
	n.peers = kafkanet.NewPeers(po, func(r broker.PeerReply) bool { return n.deliverCompletion(r) })
	for id, addr := range opts.Peers {
		n.peers.SetAddr(id, addr)
	}
	return n
}

// Start opens the node's state, recovers its metadata and partition logs, and starts
// serving. It returns once clients can connect. When ctx ends, the node shuts down as
// Close does. On error everything opened so far is closed again.
func (n *Node) Start(ctx context.Context) error {
	if n.started {
		return errors.New("node already started")
	}
	n.started = true
	n.clockStart = time.Now()
	n.clockBase = n.clockStart.UnixNano()
	if err := n.open(ctx); err != nil {
		_ = n.release()
		n.closeOnce.Do(func() { close(n.closed) }) // nothing left for Close to do
		return err
	}
	go n.loop()
	if n.quorum != nil {
		// After the loop runs: the adapter's first inputs wait for it to take them.
		if err := n.quorum.Run(n.deliverCompletion); err != nil {
			_ = n.Close()
			return fmt.Errorf("start the metadata quorum: %w", err)
		}
		n.awaitQuorumLeader(ctx)
	}
	n.srv.Start()
	n.serving.Store(true)
	var listening []string
	for _, l := range n.opts.Listeners {
		listening = append(listening, l.Name+"://"+n.srv.ListenerAddr(l.Name)+
			" (advertised "+l.Advertised+", "+string(l.Protocol)+")")
	}
	n.lg.Info("node serving", zap.Int32("node", n.opts.Config.NodeID),
		zap.String("listen", n.srv.Addr()), zap.String("advertise", n.opts.AdvertisedAddr),
		zap.Strings("listeners", listening), zap.String("inter_broker", n.opts.InterBrokerListener),
		zap.String("data", n.opts.DataDir), zap.String("http", n.httpAddr))
	go func() {
		select {
		case <-ctx.Done():
			_ = n.Close()
		case <-n.closed:
		}
	}()
	return nil
}

// open does everything of Start that can fail, before any goroutine runs. ctx ends
// the open early (a signal during start).
func (n *Node) open(ctx context.Context) error {
	if err := n.budgetFDs(); err != nil {
		return err
	}
	// Listen first: a busy port is the likeliest failure and needs no cleanup of state.
	var err error
	netOpts := n.opts.Net
	netOpts.Logger = n.lg.Named("net")
	netOpts.MaxConns = n.fds.connections
	if n.opts.MaxRequestBytes > 0 {
		netOpts.MaxRequestBytes = n.opts.MaxRequestBytes
	}
	if n.peerTLSErr != nil {
		return n.peerTLSErr
	}
	lns, err := n.netListeners()
	if err != nil {
		return err
	}
	if n.srv, err = kafkanet.ListenAll(lns, sink{n}, netOpts); err != nil {
		return err // names the address and the listener
	}
	n.replier = n.srv.NewReplier()
	if err := n.setAdvertised(); err != nil {
		return err
	}
	for _, dir := range []string{n.logsDir(), n.stateDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create data directory: %w", err)
		}
	}
	if n.state, err = disk.OpenPebbleState(ctx, n.stateDir(), n.lg); err != nil {
		return err // names the directory and the cause
	}
	start, err := n.openMetadata()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start interrupted: %w", err)
	}
	n.syncer = newSyncer(n.opts.SyncWorkers, n.deliverCompletion)
	n.cleaner = newCleaner(n.deliverCompletion)
	n.files = disk.NewFileCache(disk.OSFS{}, n.fds.logFiles)
	n.marks = n.openMarks()
	bopts := []broker.Option{broker.WithDecompressor(compress.Codecs{})}
	if n.quorum != nil {
		bopts = append(bopts, broker.WithController(brokerPort{n}),
			broker.WithQuorumSize(len(n.opts.Voters)))
	}
	n.configureAuthz() // authz.go
	n.opts.Config.LogDir = n.logsDir()
	if abs, err := filepath.Abs(n.logsDir()); err == nil {
		n.opts.Config.LogDir = abs // as Kafka names it; --data may be relative
	}
	n.b = broker.New(n.opts.Config, env{n}, rand.New(rand.NewSource(seed())), bopts...)
	if n.quorum != nil {
		if err := n.opts.Controller.Check(); err != nil {
			return fmt.Errorf("controller settings: %w", err)
		}
		if n.cl, err = newCluster(n); err != nil {
			return err
		}
	}
	// Start runs here, before the loop goroutine exists, so it is still one step at a
	// time (E5); it opens and recovers every partition log.
	n.step(start)
	if n.quorum == nil {
		// A node without a quorum leads its own metadata log from the start (M7); a
		// quorum's adapter reports its leadership itself.
		n.step(broker.MetaLeaderChanged{Leader: n.opts.Config.NodeID, Epoch: 1})
	}
	if err := n.checkFreeFDs(); err != nil {
		return err
	}
	// Last: its scrapes read the broker under the step lock, which Start above, run
	// before the loop exists, did not take.
	return n.startHTTP()
}

// Addr is the address the node's first listener listens on (with the real port when 0
// was asked).
func (n *Node) Addr() string { return n.srv.Addr() }

// NetStats counts how often each connection and request limit was hit.
func (n *Node) NetStats() kafkanet.Stats { return n.srv.Stats() }

func (n *Node) logsDir() string  { return filepath.Join(n.opts.DataDir, "logs") }
func (n *Node) stateDir() string { return filepath.Join(n.opts.DataDir, "state") }

// now is the node's clock: the wall clock at start plus monotonic time since, so it
// never goes backwards when the wall clock is stepped.
func (n *Node) now() core.Time {
	t := core.Time(n.clockBase + int64(time.Since(n.clockStart)))
	if t < n.lastNow {
		t = n.lastNow
	}
	n.lastNow = t
	return t
}

func seed() int64 {
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return time.Now().UnixNano()
	}
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// Close shuts the node down: it stops accepting connections and reading requests, lets
// the requests already read be answered (up to DrainTimeout), stops the event loop,
// syncs and closes every open log, and closes the state store. It is safe to call more
// than once; every call returns the first call's result.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		defer close(n.closed)
		if !n.started {
			return
		}
		if n.cl != nil {
			n.controlledShutdown()
		}
		// Parked fetches are answered at once rather than at their max wait, so the
		// drain below does not sit out a consumer's long poll.
		sink{n}.put(broker.Drain{})
		ctx, cancel := context.WithTimeout(context.Background(), n.opts.DrainTimeout)
		err := n.srv.Shutdown(ctx)
		cancel()
		close(n.stopLoop)
		<-n.loopDone
		n.closeErr = errors.Join(err, n.release())
		n.lg.Info("node stopped", zap.Error(n.closeErr))
	})
	return n.closeErr
}

// release stops the helpers and closes logs and state; the loop is not running.
func (n *Node) release() error {
	n.stopHTTP()
	close(n.stopping)
	n.peers.Close() // its replies are refused from now on (deliverCompletion)
	if n.syncer != nil {
		n.syncer.stop()
	}
	if n.cleaner != nil {
		n.cleaner.close()
	}
	if n.metaW != nil {
		n.metaW.stop()
	}
	var errs []error
	if n.quorum != nil {
		// Before the state store closes: raft's log and stable store live in it.
		if err := n.quorum.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close the metadata quorum: %w", err))
		}
	}
	n.timers.stop()
	if n.b != nil {
		// The loop has stopped, so this goroutine is now the broker's only stepper: sync
		// every log and save producer state, sparing the next start a log rescan.
		n.b.Shutdown()
	}
	for tp, l := range n.logs {
		if err := l.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("sync %s: %w", tp, err))
		}
		if err := l.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", tp, err))
		}
	}
	if n.srv != nil && n.b == nil { // failed start: the listener is still open
		errs = append(errs, n.srv.Close())
	}
	if n.state != nil {
		errs = append(errs, n.state.Close())
	}
	if n.marks != nil {
		_ = os.Remove(n.marks.Dir()) // only when empty: a mark outlives the process
	}
	return errors.Join(errs...)
}

// openMarks opens the node's volatile marks on tmpfs (disk.VolatileMarks), or returns nil
// with a warning: a failed fsync is then remembered by the state store alone.
func (n *Node) openMarks() *disk.DirMarks {
	root := n.opts.MarksDir
	if root == "-" {
		return nil
	}
	if root == "" {
		root = "/dev/shm"
		if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
			return nil
		}
	}
	m, err := disk.NewDirMarks(root, n.opts.DataDir)
	if err != nil {
		n.lg.Warn("no volatile marks: a failed fsync is remembered by the state store alone",
			zap.Error(err))
		return nil
	}
	return m
}

// nodeLog is a partition log the node opened. It forgets itself when the broker closes
// it, so that shutdown syncs and closes exactly the logs still open.
type nodeLog struct {
	*disk.PartitionLog
	n  *Node
	tp core.TopicPartition
	// What was appended since the last fsync was requested, for the fsync batch
	// histograms (metrics_flow.go); owned by the stepping goroutine.
	unsyncedRecords, unsyncedBytes int64
}

var _ replica.Log = (*nodeLog)(nil)

// Append appends as the disk log does, counting the batch for the metrics.
func (l *nodeLog) Append(nowMs int64, h batch.Header, b []byte) error {
	if err := l.PartitionLog.Append(nowMs, h, b); err != nil {
		return err
	}
	l.unsyncedRecords += int64(max(h.RecordCount, 0))
	l.unsyncedBytes += int64(len(b))
	l.n.flow.appended(l.tp, &h, len(b))
	return nil
}

func (l *nodeLog) Close() error {
	if l.n.logs[l.tp] == l {
		delete(l.n.logs, l.tp)
	}
	return l.PartitionLog.Close()
}
