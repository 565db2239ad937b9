package raftmeta

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/lifecycle"
)

// A node that is not a configured voter joins the quorum as a non-voter by asking the
// leader over the quorum transport itself (--controller-listen): it knows the voters'
// transport addresses from --voters, and nothing else yet (the brokers' Kafka
// addresses are in the metadata log it does not have). The transport's listener is
// shared: a connection whose first byte is joinMagic carries one join request, every
// other connection is raft's (its RPC types are 0-4). docs/quorum.md, "Joining as a
// non-voter".

// errJoinInUse marks a join refused because a live broker holds the node's id.
var errJoinInUse = errors.New("node id in use")

// joinMagic opens a join connection; raft's RPC type bytes are small integers.
const joinMagic byte = 0xE5

// Bounds of the join exchange: a request line, the wait for the first byte of a new
// connection, and the unclassified connections held at once (more are closed).
const (
	joinMaxLine     = 512
	joinFirstByte   = 10 * time.Second
	joinMaxPending  = 64
	joinAnswerBound = 15 * time.Second
)

// joinRequest asks the leader to add ID, whose transport is at Addr, as a non-voter.
// With Probe, it only asks the node's last raft index (wiped.go): nothing changes.
type joinRequest struct {
	ID    int32  `json:"id"`
	Addr  string `json:"addr"`
	Probe bool   `json:"probe,omitempty"`
}

// joinAnswer is OK, or an error with the leader's transport address when known. InUse
// says the id belongs to a non-voter at another address whose broker is alive. A
// probe's answer carries the node's raft LastIndex.
type joinAnswer struct {
	OK        bool   `json:"ok,omitempty"`
	Error     string `json:"error,omitempty"`
	Leader    string `json:"leader,omitempty"`
	InUse     bool   `json:"in_use,omitempty"`
	LastIndex uint64 `json:"last_index,omitempty"`
}

// joinLayer is raft's StreamLayer over one TCP listener, diverting join connections.
type joinLayer struct {
	ln        net.Listener
	advertise net.Addr
	conns     chan net.Conn
	quit      chan struct{}
	closeOnce sync.Once
	pending   atomic.Int32
	lg        *zap.Logger
	tls       *TransportTLS // nil: plaintext
	refused   refusals
	// serve answers one join request; nil until raft runs (answered "starting").
	serve atomic.Pointer[func(joinRequest) joinAnswer]
}

func newJoinLayer(ln net.Listener, advertise net.Addr, t *TransportTLS,
	lg *zap.Logger) *joinLayer {
	l := &joinLayer{ln: ln, advertise: advertise, conns: make(chan net.Conn),
		quit: make(chan struct{}), lg: lg, tls: t}
	l.refused.lg = lg
	go l.acceptLoop()
	return l
}

func (l *joinLayer) acceptLoop() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.quit:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.lg.Warn("quorum transport: accept failed; the listener stops", zap.Error(err))
			l.stop()
			return
		}
		if l.pending.Add(1) > joinMaxPending {
			l.pending.Add(-1)
			_ = c.Close()
			continue
		}
		go l.classify(c)
	}
}

// classify reads a connection's first byte (after the TLS handshake, with TLS): a join
// is answered here, anything else is handed to raft with that byte put back.
func (l *joinLayer) classify(c net.Conn) {
	defer l.pending.Add(-1)
	if l.tls != nil {
		var ok bool
		if c, ok = l.serverHandshake(c, joinFirstByte); !ok {
			return
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(joinFirstByte))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if b[0] == joinMagic {
		l.answer(c)
		return
	}
	select {
	case l.conns <- &prefixConn{Conn: c, first: b[0], has: true}:
	case <-l.quit:
		_ = c.Close()
	}
}

func (l *joinLayer) answer(c net.Conn) {
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(joinAnswerBound))
	line, err := bufio.NewReader(io.LimitReader(c, joinMaxLine)).ReadBytes('\n')
	if err != nil {
		return
	}
	var req joinRequest
	var ans joinAnswer
	if err := json.Unmarshal(line, &req); err != nil {
		ans.Error = "malformed join request"
	} else if serve := l.serve.Load(); serve == nil {
		ans.Error = "this node's quorum is starting"
	} else {
		ans = (*serve)(req)
	}
	out, _ := json.Marshal(ans)
	_, _ = c.Write(append(out, '\n'))
}

// Accept is raft's: the next connection that is not a join.
func (l *joinLayer) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.quit:
		return nil, errors.New("quorum transport closed")
	}
}

func (l *joinLayer) stop() { l.closeOnce.Do(func() { close(l.quit) }) }

// Close stops accepting and closes the listener.
func (l *joinLayer) Close() error {
	l.stop()
	return l.ln.Close()
}

// Addr is the advertised address (raft's LocalAddr).
func (l *joinLayer) Addr() net.Addr { return l.advertise }

// Dial is raft's outgoing connection.
func (l *joinLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialQuorum(string(address), timeout, l.tls)
}

// prefixConn gives back the first byte classify read.
type prefixConn struct {
	net.Conn
	first byte
	has   bool
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if p.has && len(b) > 0 {
		b[0], p.has = p.first, false
		return 1, nil
	}
	return p.Conn.Read(b)
}

// serveJoin is the leader's side: it adds req's node as a non-voter and answers once
// the configuration change committed. A voter's id is refused (a join never changes a
// voter's address or suffrage); a follower answers with the leader's address.
func (m *Meta) serveJoin(req joinRequest) joinAnswer {
	if req.Probe {
		return m.serveProbe()
	}
	if _, _, err := net.SplitHostPort(req.Addr); err != nil || req.ID < 0 {
		return joinAnswer{Error: fmt.Sprintf("join: bad node id %d or address %q", req.ID,
			req.Addr)}
	}
	f := m.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return joinAnswer{Error: err.Error()}
	}
	for _, s := range f.Configuration().Servers {
		if nodeOf(s.ID) == req.ID && s.Suffrage == raft.Voter {
			return joinAnswer{Error: fmt.Sprintf("node %d is a voter of the quorum: it "+
				"needs no join (start it with itself in --voters)", req.ID)}
		}
		if nodeOf(s.ID) == req.ID && string(s.Address) == req.Addr {
			return joinAnswer{OK: true} // already a member at that address
		}
	}
	addr, _ := m.r.LeaderWithID()
	if m.r.State() != raft.Leader {
		return joinAnswer{Error: "not the quorum leader", Leader: string(addr)}
	}
	for _, s := range f.Configuration().Servers {
		if nodeOf(s.ID) == req.ID && m.fsm.brokerAlive(req.ID) {
			// AddNonvoter would move the member to the new address, and the live node
			// at the old one would stop receiving the log: a second process started
			// with a live node's --id.
			m.lg.Warn("refused a join: a live broker holds that node id at another "+
				"address", zap.Int32("node", req.ID), zap.String("addr", req.Addr),
				zap.String("member_addr", string(s.Address)))
			return joinAnswer{InUse: true, Error: fmt.Sprintf("node %d is a member of the "+
				"quorum at %s and its broker is alive: the id is in use", req.ID, s.Address)}
		}
	}
	if err := m.AddNonvoter(req.ID, req.Addr, m.cfg.Timing.ApplyEnqueue); err != nil {
		return joinAnswer{Error: "add the non-voter: " + err.Error()}
	}
	m.lg.Info("added a non-voter to the metadata quorum", zap.Int32("node", req.ID),
		zap.String("addr", req.Addr))
	return joinAnswer{OK: true}
}

// member says whether this node is in its own view of the raft configuration at its
// transport address (a non-voter added before: its restart needs no join).
func (m *Meta) member() bool {
	f := m.r.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if nodeOf(s.ID) == m.cfg.NodeID && string(s.Address) == m.cfg.Addr {
			return true
		}
	}
	return false
}

// joinLoop runs on a non-voter until it is a member of the configuration at its
// address: every election timeout it asks the leader it knows, then each voter in
// turn, to add it. It logs the last refusal at most every ten seconds.
//
// Refusals because a live broker holds its id (joinAnswer.InUse) that go on for
// Config.JoinInUseGiveUp end the node: lifecycle.ErrNodeIDInUse through OnFatal.
func (m *Meta) joinLoop(quit <-chan struct{}) {
	every := max(m.cfg.Timing.Election, 50*time.Millisecond)
	giveUp := m.cfg.JoinInUseGiveUp
	if giveUp <= 0 {
		giveUp = 30 * time.Second
	}
	var lastLog, inUseSince time.Time
	for {
		if m.member() {
			m.lg.Info("a non-voter of the metadata quorum: following its log",
				zap.String("addr", m.cfg.Addr))
			return
		}
		err := m.joinOnce(quit)
		switch {
		case !errors.Is(err, errJoinInUse):
			inUseSince = time.Time{}
		case inUseSince.IsZero():
			inUseSince = time.Now()
		case time.Since(inUseSince) >= giveUp:
			m.lg.Error("giving up joining the metadata quorum: a live node holds this id",
				zap.Int32("node", m.cfg.NodeID), zap.Error(err))
			m.fail(fmt.Errorf("%w: the quorum leader has refused node %d's join for %s: %v",
				lifecycle.ErrNodeIDInUse, m.cfg.NodeID, giveUp, err))
			return
		}
		if err == nil {
			// Added: the leader's next append brings the configuration; wait for it.
			err = errors.New("added; waiting for the leader's log")
		}
		if time.Since(lastLog) > 10*time.Second {
			m.lg.Info("joining the metadata quorum as a non-voter", zap.Error(err),
				zap.Any("voters", m.cfg.Voters))
			lastLog = time.Now()
		}
		select {
		case <-quit:
			return
		case <-time.After(every):
		}
	}
}

// joinOnce asks the known leader, then every voter, until one adds this node.
func (m *Meta) joinOnce(quit <-chan struct{}) error {
	var tried []string
	if addr, _ := m.r.LeaderWithID(); addr != "" {
		tried = append(tried, string(addr))
	}
	for _, v := range m.cfg.Voters {
		tried = append(tried, v.Addr)
	}
	var errs []error
	seen := map[string]bool{}
	for i := 0; i < len(tried); i++ {
		addr := tried[i]
		if seen[addr] {
			continue
		}
		seen[addr] = true
		ans, err := askJoin(addr, joinRequest{ID: m.cfg.NodeID, Addr: m.cfg.Addr}, m.cfg.TLS,
			quit)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		case ans.OK:
			return nil
		case ans.InUse:
			errs = append(errs, fmt.Errorf("%s: %w: %s", addr, errJoinInUse, ans.Error))
		default:
			errs = append(errs, fmt.Errorf("%s: %s", addr, ans.Error))
			if ans.Leader != "" && !seen[ans.Leader] {
				tried = append(tried[:i+1], append([]string{ans.Leader}, tried[i+1:]...)...)
			}
		}
	}
	return errors.Join(errs...)
}

// askJoin sends one join request to the transport at addr (over TLS when t is set) and
// reads its answer; quit ends it early.
func askJoin(addr string, req joinRequest, t *TransportTLS, quit <-chan struct{}) (joinAnswer,
	error) {
	return askQuorum(addr, req, t, quit, 2*time.Second, joinAnswerBound)
}

// askQuorum is askJoin with its dial and answer bounds given.
func askQuorum(addr string, req joinRequest, t *TransportTLS, quit <-chan struct{},
	dial, answer time.Duration) (joinAnswer, error) {
	var ans joinAnswer
	select {
	case <-quit:
		return ans, errors.New("stopping")
	default:
	}
	c, err := dialQuorum(addr, dial, t)
	if err != nil {
		return ans, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-quit:
		case <-done:
		}
		_ = c.Close()
	}()
	_ = c.SetDeadline(time.Now().Add(answer))
	body, _ := json.Marshal(req)
	if _, err := c.Write(append(append([]byte{joinMagic}, body...), '\n')); err != nil {
		return ans, err
	}
	line, err := bufio.NewReader(io.LimitReader(c, joinMaxLine)).ReadBytes('\n')
	if err != nil {
		return ans, fmt.Errorf("no answer: %w", err)
	}
	if err := json.Unmarshal(line, &ans); err != nil {
		return ans, fmt.Errorf("malformed answer: %w", err)
	}
	return ans, nil
}
