package net

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
)

// Sink receives what the server decodes: the node's event loop. Request may block, and
// that blocking is the backpressure on the connection that sent it. For one connection,
// every Request is delivered before its ConnClosed, and ConnClosed comes exactly once.
// alone says that no other request of the connection awaits its response: the client
// sends one request at a time, so its round trip is all that matters to it.
type Sink interface {
	Request(r broker.Request, alone bool)
	ConnClosed(conn uint64)
}

// Listener is one endpoint a Server accepts connections on.
type Listener struct {
	// Name is the listener's name (PLAINTEXT, SSL, INTERNAL, ...), carried on every
	// request read from it (broker.Request.Listener).
	Name string
	// Addr is host:port; port 0 picks a free one.
	Addr string
	// TLS, when set, makes the listener's connections speak TLS: the handshake is
	// bounded by sluice.request.read.timeout.ms, and the client certificate's subject,
	// when one is given and verified, is the connection's principal (tls.go).
	TLS *tls.Config
	// SASL, when set, makes the listener's connections authenticate with SASL before
	// any other request (sasl.go): SASL_PLAINTEXT, or SASL_SSL with TLS.
	SASL *SASLConfig
}

// boundListener is a Listener with its socket.
type boundListener struct {
	Listener
	ln net.Listener
}

// Server accepts Kafka client connections on one or more listeners. Connection ids,
// limits and budgets are the server's, shared by all its listeners.
type Server struct {
	lns  []*boundListener
	sink Sink
	opts Options
	lg   *zap.Logger

	counters        counters
	connsSample     sampler // log lines of max.connections
	perIPSample     sampler // log lines of max.connections.per.ip
	handshakeSample sampler // log lines of failed TLS handshakes
	saslSample      sampler // log lines of failed SASL authentications
	reqBudget       *budget // queued.max.request.bytes
	respBudget      *budget // sluice.queued.max.response.bytes

	nextConn atomic.Uint64
	nextReq  atomic.Uint64
	epoch    time.Time // the start of clock(), for request timings (observe.go)

	mu      sync.RWMutex
	conns   map[uint64]*conn
	perIP   map[string]int // open connections per client address
	closing bool

	goroutines sync.WaitGroup // accept loop, readers, writers
	readers    sync.WaitGroup // one per live connection, done after ConnClosed
}

// Listen binds addr (host:port; port 0 picks a free one) as one plaintext listener named
// PLAINTEXT. Call Start to accept.
func Listen(addr string, sink Sink, opts Options) (*Server, error) {
	return ListenAll([]Listener{{Name: string(Plaintext), Addr: addr}}, sink, opts)
}

// ListenAll binds every listener (at least one; names distinct). On error none stays
// bound. Call Start to accept.
func ListenAll(ls []Listener, sink Sink, opts Options) (*Server, error) {
	opts.defaults()
	if len(ls) == 0 {
		return nil, errors.New("no listener")
	}
	s := &Server{sink: sink, opts: opts, lg: opts.Logger,
		conns: map[uint64]*conn{}, perIP: map[string]int{},
		reqBudget:  newBudget(opts.QueuedMaxRequestBytes),
		respBudget: newBudget(opts.QueuedMaxResponseBytes),
		epoch:      time.Now(),
	}
	for _, l := range ls {
		if s.listener(l.Name) != nil {
			s.closeListeners()
			return nil, fmt.Errorf("listener name %s appears twice", l.Name)
		}
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			s.closeListeners()
			return nil, fmt.Errorf("listen on %s (listener %s): %w", l.Addr, l.Name, err)
		}
		s.lns = append(s.lns, &boundListener{Listener: l, ln: ln})
	}
	return s, nil
}

func (s *Server) listener(name string) *boundListener {
	for _, l := range s.lns {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// closeListeners closes every listening socket; the first real error is returned.
func (s *Server) closeListeners() error {
	var first error
	for _, l := range s.lns {
		if err := l.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) && first == nil {
			first = err
		}
	}
	return first
}

// Addr is the address of the first listener, with the real port when 0 was asked.
func (s *Server) Addr() string { return s.lns[0].ln.Addr().String() }

// ListenerAddr is the address the named listener listens on ("" when there is none).
func (s *Server) ListenerAddr(name string) string {
	if l := s.listener(name); l != nil {
		return l.ln.Addr().String()
	}
	return ""
}

// Start accepts connections in the background until Shutdown.
func (s *Server) Start() {
	for _, l := range s.lns {
		s.goroutines.Add(1)
		go s.acceptLoop(l)
	}
}

func (s *Server) acceptLoop(l *boundListener) {
	defer s.goroutines.Done()
	backoff := time.Duration(0)
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait a little rather than spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.lg.Warn("accept failed", zap.Error(err), zap.Duration("retry_in", backoff))
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		s.add(nc, l)
	}
}

// add registers a new connection and starts its reader and writer, unless a
// connection cap (max.connections, max.connections.per.ip) closes it at once.
func (s *Server) add(nc net.Conn, l *boundListener) {
	ip := remoteIP(nc)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = nc.Close()
		return
	}
	if len(s.conns) >= s.opts.MaxConns {
		s.mu.Unlock()
		s.counters.connsRejected.Add(1)
		s.reject(nc, &s.connsSample, "too many connections (max.connections), closing a new one",
			zap.Int("max_conns", s.opts.MaxConns))
		return
	}
	if limit := s.opts.maxConnsOf(ip); s.perIP[ip] >= limit {
		s.mu.Unlock()
		s.counters.connsRejectedPerIP.Add(1)
		s.reject(nc, &s.perIPSample, "too many connections from one address "+
			"(max.connections.per.ip), closing a new one", zap.Int("max_conns_per_ip", limit))
		return
	}
	c := newConn(s, s.nextConn.Add(1), nc, l)
	c.ip = ip
	s.conns[c.id] = c
	s.perIP[ip]++
	s.readers.Add(1)
	s.goroutines.Add(2)
	s.mu.Unlock()
	s.counters.connsOpened.Add(1)
	go c.readLoop()
	go c.writeLoop()
}

// reject closes a connection refused by a cap, with a sampled log line: a flood of
// them logs about once a second, with the count of lines held back.
func (s *Server) reject(nc net.Conn, smp *sampler, msg string, limit zap.Field) {
	if ok, skipped := smp.allow(); ok {
		s.lg.Warn(msg, limit, zap.Stringer("remote", nc.RemoteAddr()),
			zap.Uint64("not_logged_since_last", skipped))
	}
	_ = nc.Close()
}

// remoteIP is the client address a connection counts against for
// max.connections.per.ip.
func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return nc.RemoteAddr().String()
}

// remove forgets a connection whose reader has ended.
func (s *Server) remove(c *conn) {
	s.mu.Lock()
	delete(s.conns, c.id)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
	s.mu.Unlock()
	s.counters.connsClosed.Add(1)
}

// Reply hands the node's answer to the connection's writer. It never blocks on the
// socket, so the node's loop can call it. A reply for a connection that has gone away
// is dropped.
func (s *Server) Reply(r broker.Reply) {
	s.mu.RLock()
	c := s.conns[r.Conn]
	s.mu.RUnlock()
	if c != nil {
		c.complete(r)
	}
}

// Conns returns the number of open connections.
func (s *Server) Conns() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.conns)
}

// Shutdown stops accepting, stops reading requests, and lets every connection deliver
// the responses to the requests it already read before closing it. When ctx ends
// first, the remaining connections are closed at once. It returns when every goroutine
// of the server has ended.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	err := s.closeListeners()
	for _, c := range conns {
		c.drain()
	}
	drained := make(chan struct{})
	go func() { s.readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
		for _, c := range conns {
			c.close()
		}
		<-drained
	}
	s.goroutines.Wait()
	return err
}

// Close closes every connection without waiting for pending responses.
func (s *Server) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return s.Shutdown(ctx)
}
