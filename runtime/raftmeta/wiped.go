package raftmeta

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/disk/raftstore"
)

// A configured voter whose raft store is empty (a new disk, a deleted data directory)
// has forgotten its term, its vote and the entries it acknowledged. If the quorum has a
// log, its vote could elect a leader that lacks committed entries, or count twice in
// one term. So it asks the other voters (a probe over the join protocol) for their
// last raft index first: if any has a log, it does not bootstrap and does not vote
// (the voteGate) until its own log reaches the highest index it was told.
// docs/quorum.md, "The wiped-voter hazard".

// votesAfterKey is the stable-store key holding the raft index a wiped voter must reach
// before it votes again; absent or 0: it votes. It survives a restart before catch-up.
var votesAfterKey = []byte("SluiceVotesAfterIndex")

// Bounds of the probe at start: each voter's dial, its answer, and the whole round.
const (
	probeDial    = 500 * time.Millisecond
	probeAnswer  = time.Second
	probeOverall = 3 * time.Second
	gateCheck    = time.Second // how often a gated voter checks whether it caught up
)

// errVoteGated answers a vote a gated voter refuses. It must not contain raft's
// "unexpected command" text, which a candidate reads as a granted pre-vote.
var errVoteGated = errors.New("this voter's raft state was wiped: it does not vote " +
	"until it has caught up with the quorum's log")

// readVotesAfter is the stored gate index; 0 when none.
func readVotesAfter(st raft.StableStore) (uint64, error) {
	v, err := st.GetUint64(votesAfterKey)
	if errors.Is(err, raftstore.ErrKeyNotFound) {
		return 0, nil
	}
	return v, err
}

// probeQuorum asks every other voter for its last raft index, within probeOverall,
// and returns the highest answered (0: none answered).
func (m *Meta) probeQuorum() uint64 {
	deadline := time.Now().Add(probeOverall)
	quit := make(chan struct{})
	var (
		mu   sync.Mutex
		high uint64
		wg   sync.WaitGroup
	)
	for _, v := range m.cfg.Voters {
		if v.ID == m.cfg.NodeID {
			continue
		}
		wg.Add(1)
		go func(addr string) {
			defer wg.Done()
			ans, err := askQuorum(addr, joinRequest{ID: m.cfg.NodeID, Addr: m.cfg.Addr,
				Probe: true}, m.cfg.TLS, quit, probeDial, probeAnswer)
			if err != nil || !ans.OK {
				m.lg.Debug("probe of a voter unanswered", zap.String("addr", addr),
					zap.Error(err), zap.String("answer", ans.Error))
				return
			}
			mu.Lock()
			high = max(high, ans.LastIndex)
			mu.Unlock()
		}(v.Addr)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(deadline)):
		close(quit)
		<-done
	}
	return high
}

// serveProbe answers a probe: this node's last raft index, no membership change.
func (m *Meta) serveProbe() joinAnswer {
	return joinAnswer{OK: true, LastIndex: m.r.LastIndex()}
}

// wipedTarget decides, before raft starts, whether this voter is gated: the stored
// index of an earlier incarnation, or (raft state empty) the highest last index the
// other voters report when one has a log (more than the bootstrap entry). It stores a
// new target before returning it.
func (m *Meta) wipedTarget(existing bool) (uint64, error) {
	target, err := readVotesAfter(m.store)
	if err != nil || target > 0 || existing {
		return target, err
	}
	high := m.probeQuorum()
	if high <= 1 {
		return 0, nil // a fresh quorum, or nobody answered: bootstrap as before
	}
	if err := m.store.SetUint64(votesAfterKey, high); err != nil {
		return 0, err
	}
	return high, nil
}

// voteGate wraps the transport of a gated voter: while shut it refuses the vote
// requests it receives (RequestVote, RequestPreVote, TimeoutNow) and sends none, so
// the voter neither grants a vote nor campaigns. Everything else passes.
type voteGate struct {
	*raft.NetworkTransport
	shut    atomic.Bool
	refused atomic.Int64 // incoming vote requests refused
	out     chan raft.RPC
	quit    chan struct{}
	once    sync.Once
}

func newVoteGate(t *raft.NetworkTransport) *voteGate {
	g := &voteGate{NetworkTransport: t, out: make(chan raft.RPC), quit: make(chan struct{})}
	g.shut.Store(true)
	go g.filter(t.Consumer())
	return g
}

// closed reports whether votes are refused now.
func (g *voteGate) closed() bool { return g.shut.Load() && !mutantOn("wiped-votes") }

func (g *voteGate) filter(in <-chan raft.RPC) {
	for {
		select {
		case rpc := <-in:
			if g.closed() {
				switch rpc.Command.(type) {
				case *raft.RequestVoteRequest, *raft.RequestPreVoteRequest,
					*raft.TimeoutNowRequest:
					g.refused.Add(1)
					rpc.Respond(nil, errVoteGated)
					continue
				}
			}
			select {
			case g.out <- rpc:
			case <-g.quit:
				return
			}
		case <-g.quit:
			return
		}
	}
}

// Consumer is raft's channel of incoming RPCs, vote requests filtered out while shut.
func (g *voteGate) Consumer() <-chan raft.RPC { return g.out }

// RequestVote sends a vote request, unless the gate is shut.
func (g *voteGate) RequestVote(id raft.ServerID, target raft.ServerAddress,
	args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if g.closed() {
		return errVoteGated
	}
	return g.NetworkTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote sends a pre-vote request, unless the gate is shut.
func (g *voteGate) RequestPreVote(id raft.ServerID, target raft.ServerAddress,
	args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if g.closed() {
		return errVoteGated
	}
	return g.NetworkTransport.RequestPreVote(id, target, args, resp)
}

// open lets votes through from now on.
func (g *voteGate) open() { g.shut.Store(false) }

// stop ends the filter; the wrapped transport is closed by its owner.
func (g *voteGate) stop() { g.once.Do(func() { close(g.quit) }) }

// awaitCatchUp runs on a gated voter: every gateCheck it compares raft's last index
// with target; once reached it clears the stored index and opens the gate.
func (m *Meta) awaitCatchUp(target uint64, quit <-chan struct{}) {
	tick := time.NewTicker(gateCheck)
	defer tick.Stop()
	for {
		select {
		case <-quit:
			return
		case <-tick.C:
		}
		last := m.r.LastIndex()
		if last < target {
			continue
		}
		if err := m.store.SetUint64(votesAfterKey, 0); err != nil {
			m.lg.Warn("could not clear the wiped voter's gate; it stays shut",
				zap.Error(err))
			continue
		}
		m.gate.open()
		m.lg.Info("this voter has caught up with the quorum's log: it votes again",
			zap.Uint64("target_index", target), zap.Uint64("last_index", last))
		return
	}
}
