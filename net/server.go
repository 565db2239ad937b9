package net

import (
	"context"
	"errors"
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

// Options configure a Server. Zero values take the defaults named on each field.
type Options struct {
	// MaxRequestBytes is the largest request frame accepted (Kafka's
	// socket.request.max.bytes). Default 100 MiB.
	MaxRequestBytes int
	// MaxInFlight bounds the requests of one connection that await their response; the
	// server stops reading the socket while it is reached. Default 1000.
	MaxInFlight int
	// MaxInFlightBytes bounds the request bytes of one connection that await their
	// response (one request is always let through). Default 64 MiB.
	MaxInFlightBytes int
	// MaxConns bounds open connections; past it new connections are closed at once.
	// Default 10000.
	MaxConns int
	// Logger receives connection errors. Default: no logging.
	Logger *zap.Logger
}

func (o *Options) defaults() {
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = 100 << 20
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 1000
	}
	if o.MaxInFlightBytes <= 0 {
		o.MaxInFlightBytes = 64 << 20
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 10000
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
}

// Server accepts Kafka client connections on one listener.
type Server struct {
	ln   net.Listener
	sink Sink
	opts Options
	lg   *zap.Logger

	nextConn atomic.Uint64
	nextReq  atomic.Uint64

	mu      sync.RWMutex
	conns   map[uint64]*conn
	closing bool

	goroutines sync.WaitGroup // accept loop, readers, writers
	readers    sync.WaitGroup // one per live connection, done after ConnClosed
}

// Listen binds addr (host:port; port 0 picks a free one). Call Start to accept.
func Listen(addr string, sink Sink, opts Options) (*Server, error) {
	opts.defaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Server{ln: ln, sink: sink, opts: opts, lg: opts.Logger,
		conns: map[uint64]*conn{}}, nil
}

// Addr is the address the server listens on, with the real port when 0 was asked.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Start accepts connections in the background until Shutdown.
func (s *Server) Start() {
	s.goroutines.Add(1)
	go s.acceptLoop()
}

func (s *Server) acceptLoop() {
	defer s.goroutines.Done()
	backoff := time.Duration(0)
	for {
		nc, err := s.ln.Accept()
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
		s.add(nc)
	}
}

// add registers a new connection and starts its reader and writer.
func (s *Server) add(nc net.Conn) {
	s.mu.Lock()
	if s.closing || len(s.conns) >= s.opts.MaxConns {
		closing := s.closing
		s.mu.Unlock()
		if !closing {
			s.lg.Warn("too many connections, closing a new one",
				zap.Int("max_conns", s.opts.MaxConns), zap.Stringer("remote", nc.RemoteAddr()))
		}
		_ = nc.Close()
		return
	}
	c := newConn(s, s.nextConn.Add(1), nc)
	s.conns[c.id] = c
	s.readers.Add(1)
	s.goroutines.Add(2)
	s.mu.Unlock()
	go c.readLoop()
	go c.writeLoop()
}

// remove forgets a connection whose reader has ended.
func (s *Server) remove(c *conn) {
	s.mu.Lock()
	delete(s.conns, c.id)
	s.mu.Unlock()
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
	err := s.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
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
