package net

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdnet "net"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
)

// PeerOptions configure Peers. Zero values take the defaults named on each field.
type PeerOptions struct {
	// ClientID names this node in its peers' logs. Default "sluice-broker".
	ClientID string
	// MaxInFlight bounds the requests to one peer awaiting their answer; past it
	// SendPeer is answered at once with ErrPeerBusy. Default 64. (Not a node setting
	// yet: it becomes one with the cluster flags, docs/limits.md.)
	MaxInFlight int
	// MaxResponseBytes is the largest response frame read from a peer
	// (socket.request.max.bytes, as the server's own limit). Default 100 MiB.
	MaxResponseBytes int32
	// DialTimeout bounds one connection attempt. Default 10s.
	DialTimeout time.Duration
	// TLS, when set, is used to reach peers whose inter-broker listener is SSL.
	TLS *tls.Config
	// SASL, when set, authenticates to peers whose inter-broker listener is
	// SASL_PLAINTEXT or SASL_SSL.
	SASL sasl.Mechanism
	// Logger receives the client's own log lines (at debug) and ours. Default: none.
	Logger *zap.Logger
	// LinkDown, when set, is told (from a goroutine of its own) that a connection to
	// node's listener closed, whatever closed it. The node's lifecycle then heartbeats
	// at once if node is the controller's (docs/controller.md, "Fencing a dead broker
	// early"). Not called once Close began.
	LinkDown func(node int32)
}

func (o *PeerOptions) defaults() {
	if o.ClientID == "" {
		o.ClientID = "sluice-broker"
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 64
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 100 << 20
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Errors a PeerReply may carry besides the client's own (connection refused or lost).
var (
	ErrPeerUnknown = errors.New("no address known for that node")
	ErrPeerBusy    = errors.New("too many inter-broker requests in flight to that node")
	ErrPeerTimeout = errors.New("inter-broker request timed out")
	ErrPeersClosed = errors.New("node is stopping")
)

// Peers is the node's inter-broker client: one franz-go client per peer, each holding
// the connection to that peer's Kafka listener and negotiating API versions with it
// (ApiVersions), so requests go out at the highest version both nodes support. It keeps
// rule E7 for the driver: every Send is answered exactly once through deliver, unless
// deliver refuses (the node is stopping). Each request in flight is one goroutine,
// bounded per peer by MaxInFlight.
type Peers struct {
	opts    PeerOptions
	deliver func(broker.PeerReply) bool

	mu      sync.Mutex
	addrs   map[int32]string
	clients map[int32]*peer
	closed  bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// peer is the client for one node, at one address.
type peer struct {
	addr     string
	cl       *kgo.Client
	inFlight int
}

// NewPeers returns a client that answers through deliver, which is called from the
// request's goroutine and may block until the node's loop takes the reply.
func NewPeers(opts PeerOptions, deliver func(broker.PeerReply) bool) *Peers {
	opts.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Peers{opts: opts, deliver: deliver, addrs: map[int32]string{},
		clients: map[int32]*peer{}, ctx: ctx, cancel: cancel}
}

// SetAddr records where node listens; a changed address closes the old connection
// (requests in flight on it fail). An empty addr forgets the node.
func (p *Peers) SetAddr(node int32, addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.addrs[node] == addr {
		return
	}
	if addr == "" {
		delete(p.addrs, node)
	} else {
		p.addrs[node] = addr
	}
	if old := p.clients[node]; old != nil {
		delete(p.clients, node)
		go old.cl.Close() // may wait for requests in flight; they fail
	}
}

// Addrs returns the known peers and their addresses, by node id.
func (p *Peers) Addrs() [][2]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]int32, 0, len(p.addrs))
	for id := range p.addrs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([][2]string, len(ids))
	for i, id := range ids {
		out[i] = [2]string{fmt.Sprint(id), p.addrs[id]}
	}
	return out
}

// Send starts one request; its PeerReply comes through deliver (E7). It never blocks on
// the network: the caller is the node's event loop.
func (p *Peers) Send(req broker.PeerRequest) {
	pe, err := p.acquire(req.Node)
	if err != nil {
		p.answer(broker.PeerReply{Node: req.Node, ID: req.ID, Err: err})
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		resp, err := p.roundTrip(pe, req)
		p.release(req.Node, pe)
		p.answer(broker.PeerReply{Node: req.Node, ID: req.ID, Msg: resp, Err: err})
	}()
}

// answer delivers a reply, from its own goroutine when the request never started, so
// that Send returns before its reply is stepped (E5).
func (p *Peers) answer(r broker.PeerReply) {
	if r.Msg == nil && r.Err != nil && !p.running() {
		return // stopping: the incarnation ends, nothing more is delivered (E6)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.deliver(r)
	}()
}

func (p *Peers) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed
}

// acquire takes a place in node's in-flight budget, building its client on first use.
func (p *Peers) acquire(node int32) (*peer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPeersClosed
	}
	addr, ok := p.addrs[node]
	if !ok {
		return nil, fmt.Errorf("node %d: %w", node, ErrPeerUnknown)
	}
	pe := p.clients[node]
	if pe == nil {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(p.opts.ClientID),
			kgo.BrokerMaxReadBytes(p.opts.MaxResponseBytes),
			kgo.DialTimeout(p.opts.DialTimeout),
			kgo.WithLogger(zapKgoLogger{p.opts.Logger.With(zap.Int32("peer", node))})}
		if p.opts.TLS != nil {
			opts = append(opts, kgo.DialTLSConfig(p.opts.TLS.Clone()))
		}
		if p.opts.SASL != nil {
			opts = append(opts, kgo.SASL(p.opts.SASL))
		}
		if p.opts.LinkDown != nil {
			opts = append(opts, kgo.WithHooks(linkHook{p: p, node: node}))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, fmt.Errorf("node %d at %s: %w", node, addr, err)
		}
		pe = &peer{addr: addr, cl: cl}
		p.clients[node] = pe
	}
	if pe.inFlight >= p.opts.MaxInFlight {
		p.opts.Logger.Warn("inter-broker requests in flight at the limit",
			zap.Int32("peer", node), zap.Int("limit", p.opts.MaxInFlight))
		return nil, fmt.Errorf("node %d: %w (limit %d)", node, ErrPeerBusy,
			p.opts.MaxInFlight)
	}
	pe.inFlight++
	return pe, nil
}

func (p *Peers) release(_ int32, pe *peer) {
	p.mu.Lock()
	pe.inFlight--
	p.mu.Unlock()
}

// roundTrip sends req to the peer's one seed broker and waits for its answer, at most
// TimeoutMs. franz-go sets the version from the peer's ApiVersions.
func (p *Peers) roundTrip(pe *peer, req broker.PeerRequest) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(p.ctx, time.Duration(req.TimeoutMs)*time.Millisecond)
	defer cancel()
	seeds := pe.cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, fmt.Errorf("node %d at %s: no broker", req.Node, pe.addr)
	}
	r, err := seeds[0].Request(ctx, req.Msg)
	switch {
	case err == nil:
		return r, nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("node %d at %s: %w after %d ms", req.Node, pe.addr,
			ErrPeerTimeout, req.TimeoutMs)
	case p.ctx.Err() != nil:
		return nil, ErrPeersClosed
	default:
		return nil, fmt.Errorf("node %d at %s: %w", req.Node, pe.addr, err)
	}
}

// Close fails every request in flight, waits for their goroutines and closes the
// connections. The caller has stopped calling Send (the node's loop has ended). Replies not yet delivered are dropped if deliver refuses them.
func (p *Peers) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	clients := p.clients
	p.clients = map[int32]*peer{}
	p.mu.Unlock()
	p.cancel()
	for _, pe := range clients {
		pe.cl.Close()
	}
	p.wg.Wait()
}

// linkHook reports the closed connections of one peer's client (kgo calls it as a
// connection dies: an error, the peer's close, reaping, the client's Close).
type linkHook struct {
	p    *Peers
	node int32
}

func (h linkHook) OnBrokerDisconnect(kgo.BrokerMetadata, stdnet.Conn) {
	p := h.p
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.wg.Add(1) // under mu, before closed is set: Close's Wait sees it
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		p.opts.LinkDown(h.node)
	}()
}

// zapKgoLogger passes franz-go's log lines to zap at debug: connection churn to a peer
// is expected while it restarts, and the broker logs what matters to it.
type zapKgoLogger struct{ lg *zap.Logger }

func (l zapKgoLogger) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l zapKgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	fields := make([]zap.Field, 0, len(keyvals)/2+1)
	for i := 0; i+1 < len(keyvals); i += 2 {
		fields = append(fields, zap.Any(fmt.Sprint(keyvals[i]), keyvals[i+1]))
	}
	fields = append(fields, zap.Stringer("kgo_level", level))
	l.lg.Debug(msg, fields...)
}
