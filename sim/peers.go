package sim

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/broker"
)

// maxPeerNodes bounds the nodes whose links get actor ids of their own: link actors
// sit between the nodes (0..Nodes-1) and the clients (100 upwards).
const maxPeerNodes = 9

// peerLink is one node's connection to another node's Kafka listener, carrying the
// inter-broker requests its broker sends (Env.SendPeer, rule E7). It is a client of the
// simulated network like any other, so latency, clogs, resets and crashes act on it as
// on client connections; the peer sees its requests as ordinary Requests. Requests go
// out at the highest version both nodes support (the same broker: its own maximum), as
// the production client negotiates with ApiVersions.
type peerLink struct {
	clientBase
	from *node
	to   int32
	// gens is, for each open connection of the link, the incarnation of from that last
	// sent on it: a lost connection is told to that incarnation only (E6).
	gens map[uint64]uint64
}

// peerActor numbers the link from node from to node to.
func peerActor(from, to int32) int32 { return 10 + from*maxPeerNodes + to }

// link returns the link from n to the node with index to, made on first use.
func (w *World) link(n *node, to int32) *peerLink {
	key := [2]int32{n.id, to}
	if l := w.links[key]; l != nil {
		return l
	}
	l := &peerLink{from: n, to: to, gens: map[uint64]uint64{}}
	l.clientBase = newClientBase(w, peerActor(n.id, to),
		fmt.Sprintf("node%d->node%d", n.id, to), func() {})
	l.clientBase.n = w.nodes[to]
	l.clientBase.rt = nil // a link goes to its one peer
	l.clientBase.lost = l.lost
	for _, v := range broker.SupportedVersions {
		if req := kmsg.RequestForKey(v.Key); req != nil {
			l.vers[v.Key] = min(v.Max, req.MaxVersion())
		}
	}
	if w.links == nil {
		w.links = map[[2]int32]*peerLink{}
	}
	w.links[key] = l
	return l
}

// sendPeer carries one SendPeer of incarnation gen of n; the reply is stepped into that
// incarnation only (E6).
func (w *World) sendPeer(n *node, gen uint64, p broker.PeerRequest) {
	reply := func(r broker.PeerReply) {
		if n.up && n.gen == gen {
			if w.onPeerReply != nil {
				w.onPeerReply(n.id, r)
			}
			n.input(r)
		}
	}
	to := p.Node - 1 // node ids are indexes plus one (node.boot)
	if to < 0 || int(to) >= len(w.nodes) || len(w.nodes) > maxPeerNodes {
		// Delivered as its own event: SendPeer runs inside the broker's step (E5).
		w.at(w.now, KindToNode, n.id, p.ID, 2, func() {
			reply(broker.PeerReply{Node: p.Node, ID: p.ID,
				Err: fmt.Errorf("no address known for node %d", p.Node)})
		})
		return
	}
	if w.holdFetch(n, gen, p) {
		return
	}
	l := w.link(n, to)
	l.send(p.Msg, p.TimeoutMs, func(resp kmsg.Response, err error) {
		reply(broker.PeerReply{Node: p.Node, ID: p.ID, Msg: resp, Err: err})
	})
	if l.c != nil {
		l.gens[l.c.id] = gen
	}
}

// lost tells the link's node that a connection of its link closed (PeerLinkDown, as the
// production client's disconnect hook does), if the incarnation that used it is up.
func (l *peerLink) lost(c *conn) {
	gen, ok := l.gens[c.id]
	delete(l.gens, c.id)
	if n := l.from; ok && n.up && n.gen == gen {
		n.input(broker.PeerLinkDown{Node: l.to + 1})
	}
}

// dropLinks breaks the connections of n's links when its process dies: their requests
// fail (and, the incarnation being gone, their replies are dropped), and the peers see
// the connections close.
func (w *World) dropLinks(n *node) {
	for to := int32(0); to < int32(len(w.nodes)); to++ {
		if l := w.links[[2]int32{n.id, to}]; l != nil && l.c != nil {
			w.resetConn(l.c)
		}
	}
}

// sortedLinks lists the links made during the run by (from, to).
func (w *World) sortedLinks() []*peerLink {
	keys := make([][2]int32, 0, len(w.links))
	for k := range w.links {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || (keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1])
	})
	out := make([]*peerLink, len(keys))
	for i, k := range keys {
		out[i] = w.links[k]
	}
	return out
}
