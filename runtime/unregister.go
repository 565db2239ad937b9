package runtime

import (
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// A broker unregistered for good (UnregisterBroker, core/controller/unregister.go) may
// still be a non-voter of the raft quorum: the leader would go on sending it entries
// forever. The node that leads the quorum when the BrokerUnregistered record applies,
// or that becomes leader later in this incarnation, removes it from the raft
// configuration (raftmeta.Meta.RemoveNonvoter); a registration of the id again (the
// machine came back) cancels that. docs/operations.md, "Replace a dead machine".

// removeNonvoterBound bounds one raft configuration change.
const removeNonvoterBound = 10 * time.Second

// reaper holds the unregistered node ids not yet removed from the raft configuration.
type reaper struct {
	mu      sync.Mutex
	pending map[int32]bool
	running map[int32]bool
}

// observeMembership follows the records and leadership changes that concern the raft
// configuration's non-voters. It runs on the loop, before the actors step.
func (n *Node) observeMembership(in broker.Input) {
	if n.quorum == nil {
		return
	}
	r := &n.reap
	switch in := in.(type) {
	case broker.MetaApplied:
		switch in.Record.Kind {
		case meta.KindBrokerUnregistered:
			r.mu.Lock()
			if r.pending == nil {
				r.pending, r.running = map[int32]bool{}, map[int32]bool{}
			}
			r.pending[in.Record.NodeID] = true
			r.mu.Unlock()
			n.removeNonvoters()
		case meta.KindBrokerRegistered:
			r.mu.Lock()
			delete(r.pending, in.Record.NodeID)
			r.mu.Unlock()
		}
	case broker.MetaLeaderChanged:
		if in.Leader == n.opts.Config.NodeID {
			n.removeNonvoters()
		}
	}
}

// removeNonvoters removes every pending id from the raft configuration, each in a
// goroutine of its own (a configuration change waits for its commit), when this node
// leads the quorum.
func (n *Node) removeNonvoters() {
	if leader, _ := n.quorum.Leader(); leader != n.opts.Config.NodeID {
		return
	}
	r := &n.reap
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range r.pending {
		if r.running[id] {
			continue
		}
		r.running[id] = true
		go func() {
			err := n.quorum.RemoveNonvoter(id, removeNonvoterBound)
			r.mu.Lock()
			delete(r.running, id)
			if err == nil {
				delete(r.pending, id)
			}
			r.mu.Unlock()
			if err != nil {
				n.lg.Warn("could not remove an unregistered broker from the metadata "+
					"quorum's non-voters; the next quorum leader of this incarnation "+
					"tries again", zap.Int32("node", id), zap.Error(err))
				return
			}
			n.lg.Info("removed an unregistered broker from the metadata quorum",
				zap.Int32("node", id))
		}()
	}
}

// QuorumNonvoters lists the node ids that are non-voters in this node's view of the raft
// configuration (nil without a quorum).
func (n *Node) QuorumNonvoters() []int32 {
	if n.quorum == nil || n.quorum.Raft() == nil {
		return nil
	}
	f := n.quorum.Raft().GetConfiguration()
	if f.Error() != nil {
		return nil
	}
	var out []int32
	for _, s := range f.Configuration().Servers {
		if s.Suffrage != raft.Voter {
			if id, err := strconv.ParseInt(string(s.ID), 10, 32); err == nil {
				out = append(out, int32(id))
			}
		}
	}
	return out
}

// QuorumLeader is the node id leading the metadata quorum as this node knows it (-1:
// none known or no quorum).
func (n *Node) QuorumLeader() int32 {
	if n.quorum == nil || n.quorum.Raft() == nil {
		return -1
	}
	l, _ := n.quorum.Leader()
	return l
}
