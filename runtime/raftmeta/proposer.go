package raftmeta

import (
	"encoding/json"
	"errors"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

type proposal struct {
	rec   meta.Record
	token uint64
}

// proposer hands proposals to raft on one goroutine, in the order the node made them,
// so a leader appends them in that order (M5), and answers each once raft's future
// completes (M3). The answers come in proposal order too.
type proposer struct {
	m     *Meta
	mu    sync.Mutex
	queue []proposal
	wake  chan struct{}
	quit  chan struct{}
	done  chan struct{}
}

func newProposer(m *Meta) *proposer {
	p := &proposer{m: m, wake: make(chan struct{}, 1), quit: make(chan struct{}),
		done: make(chan struct{})}
	go p.run()
	return p
}

func (p *proposer) submit(rec meta.Record, token uint64) {
	p.mu.Lock()
	p.queue = append(p.queue, proposal{rec: rec, token: token})
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *proposer) run() {
	defer close(p.done)
	for {
		select {
		case <-p.wake:
		case <-p.quit:
			return
		}
		p.mu.Lock()
		batch := p.queue
		p.queue = nil
		p.mu.Unlock()
		// Everything queued enters raft before the first answer is awaited, so a batch
		// shares one append and one commit on the leader.
		futures := make([]raft.ApplyFuture, len(batch))
		for i, pr := range batch {
			data, err := json.Marshal(pr.rec)
			if err != nil {
				futures[i] = nil
				continue
			}
			futures[i] = p.m.r.Apply(data, p.m.cfg.Timing.ApplyEnqueue)
		}
		for i, pr := range batch {
			a, ok := p.answer(pr.token, futures[i])
			if !ok || !p.m.out.send(a) {
				return
			}
		}
	}
}

// answer waits for f and maps raft's outcome onto the port's (M3); false when the
// incarnation ended first.
func (p *proposer) answer(token uint64, f raft.ApplyFuture) (broker.MetaAnswer, bool) {
	a := broker.MetaAnswer{Token: token, Leader: -1}
	if f == nil {
		a.Outcome, a.Err = broker.MetaRejected, errors.New("record does not encode")
		return a, true
	}
	ok, err := p.wait(f)
	if !ok {
		return a, false
	}
	a.Outcome, a.Err = outcomeOf(err)
	switch a.Outcome {
	case broker.MetaCommitted:
		idx, ok := f.Response().(uint64)
		if !ok { // the FSM could not deliver its MetaApplied (errNotDelivered)
			a.Outcome, a.Err = broker.MetaUnknown, errNotDelivered
			if e, isErr := f.Response().(error); isErr {
				a.Err = e
			}
			return a, true
		}
		a.Index = idx
	case broker.MetaNotLeader:
		a.Leader, _ = p.m.Leader()
	}
	return a, true
}

// wait returns f's error, or false once the proposer stops. Raft never completes an
// apply future whose entry committed but was still queued for its FSM goroutine when
// it shut down, so the wait runs on its own goroutine, which is then left blocked on a
// raft instance that is gone (at most one per incarnation: the proposer waits for one
// future at a time).
func (p *proposer) wait(f raft.ApplyFuture) (bool, error) {
	ch := make(chan error, 1)
	go func() { ch <- f.Error() }()
	select {
	case err := <-ch:
		return true, err
	case <-p.quit:
		return false, nil
	}
}

// outcomeOf maps the error of raft's apply future onto the port's answers:
//   - nil: committed (its MetaApplied was delivered first by the FSM, M4);
//   - ErrNotLeader: raft refused the entry before appending it (this node follows,
//     is a candidate, or is stepping down), and ErrLeadershipTransferInProgress: the
//     same while leadership moves away: NotLeader;
//   - ErrEnqueueTimeout: it never entered raft's queue: Rejected;
//   - anything else (ErrLeadershipLost: appended, then leadership was lost before it
//     committed; ErrRaftShutdown; ErrAbortedByRestore; a store write that failed and is
//     in doubt): Unknown, it may still commit.
func outcomeOf(err error) (broker.MetaOutcome, error) {
	switch {
	case err == nil:
		return broker.MetaCommitted, nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return broker.MetaNotLeader, err
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return broker.MetaRejected, err
	default:
		return broker.MetaUnknown, err
	}
}

func (p *proposer) stop() {
	close(p.quit)
	<-p.done
}
