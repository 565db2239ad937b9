package raftmeta

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sluicemq/sluice/core/broker"
)

// watcher turns raft's leadership into MetaLeaderChanged (M7). It wakes on raft's
// leader observations and on a ticker (an observer's channel may drop events), reads
// the leader and the term, and reports a change of either. The epoch is the raft term
// times 256 plus one, or the last epoch plus one when that is not larger (a second
// change within a term: a leader, then none), so it increases within an incarnation
// and, the term being durable, across incarnations too.
type watcher struct {
	out *outbox

	mu     sync.Mutex
	leader int32
	term   uint64
	epoch  uint64

	obs  *raft.Observer
	r    *raft.Raft
	quit chan struct{}
	done chan struct{}
}

func newWatcher(out *outbox) *watcher {
	return &watcher{out: out, leader: -2, quit: make(chan struct{}), done: make(chan struct{})}
}

// report delivers MetaLeaderChanged when leader or term changed (an unknown leader
// reported again in a later term is no change).
func (w *watcher) report(leader int32, term uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if leader == w.leader && (term == w.term || leader == -1) {
		return
	}
	w.leader, w.term = leader, term
	e := term<<8 + 1
	if e <= w.epoch {
		e = w.epoch + 1
	}
	w.epoch = e
	w.out.send(broker.MetaLeaderChanged{Leader: leader, Epoch: e})
}

func (w *watcher) run(r *raft.Raft, every time.Duration) {
	ch := make(chan raft.Observation, 16)
	w.r = r
	w.obs = raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(w.obs)
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ch:
			case <-t.C:
			case <-w.quit:
				return
			}
			_, id := r.LeaderWithID()
			w.report(nodeOf(id), r.CurrentTerm())
		}
	}()
}

func (w *watcher) stop() {
	if w.r == nil {
		return
	}
	close(w.quit)
	<-w.done
	w.r.DeregisterObserver(w.obs)
}
