package sim

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/meta"
)

// The ACL checker (docs/simulation.md "ACLs and quotas"; the guarantee it holds the
// brokers to is docs/security.md "When an ACL change takes effect").
//
// The simulator keeps, per node, its own view of the bindings on aclTopic, built from
// the metadata records that node's broker was stepped with (Start's snapshot and
// records, then each MetaApplied, in order): the same inputs the broker's image is
// built from, but interpreted by the checker's own few lines (aclView.allows), not by
// core/acl. When a node is stepped with a Produce or Fetch of an ACL client, the
// checker notes the node, the principal, the node's applied metadata index and
// whether its view allows the request; when the node replies, it notes the view again.
// Then:
//   - a Produce is decided on the image of the step it arrives in (authorize.go), so its
//     answer must match the view at that step exactly: refused with
//     TOPIC_AUTHORIZATION_FAILED when the view has no grant (a revocation the node has
//     applied is in force), never refused for authorization when it has one;
//   - a Fetch is decided in the step that handles it, which a quota hold may delay; it
//     must be refused when the view refused it both when it arrived and when it was
//     answered, and served when the view allowed it at both;
//   - a produce refused for authorization was never written: its value (each one is
//     unique) must not appear in any read of aclTopic.
//
// Quotas: the client whose client id has the produce quota (ACLSpec.QuotaBytes) must
// still get acknowledgements after the quota is set, and once it has had well over the
// quota's worth acknowledged its answers must have carried ThrottleMillis > 0 at least
// once (a broker meters in memory, over quota.window.num windows of a second: so
// "well over" is twice the quota's worth of those 11 windows acknowledged by one
// incarnation of one node); the other ACL clients have no quota and must never be throttled.

// aclWorld is the workload's and the checker's state.
type aclWorld struct {
	w        *World
	clients  map[int32]*aclClient // by actor
	list     []*aclClient         // the same, in actor order (never range over the map)
	views    []*aclView           // per node
	inflight map[[2]uint64]*aclReq
	refused  map[string]bool // values of produces refused for authorization
	read     map[string]bool // values read from aclTopic
	// quotaSetAt: when the admin was answered that the quota is set (0: not yet).
	quotaSetAt int64
}

// aclView is one node's bindings on aclTopic and its applied metadata index.
type aclView struct {
	applied  uint64
	bindings map[acl.Binding]bool
}

// aclReq is what the checker noted about one request of an ACL client.
type aclReq struct {
	node       int32
	gen        uint64 // the node's incarnation
	applied    uint64 // the node's applied metadata index when it was stepped with it
	principal  string
	op         acl.Operation
	allowedIn  bool // the view allowed it when the node was stepped with it
	allowedOut bool // ... when the node replied
	replied    bool
}

func newACLWorld(w *World) *aclWorld {
	a := &aclWorld{w: w, clients: map[int32]*aclClient{}, inflight: map[[2]uint64]*aclReq{},
		refused: map[string]bool{}, read: map[string]bool{}}
	for range w.nodes {
		a.views = append(a.views, &aclView{bindings: map[acl.Binding]bool{}})
	}
	return a
}

// addACLClients adds the workload's admin and clients after the others (actor ids from
// actor+1).
func (w *World) addACLClients(actor int32) {
	if !w.cfg.ACLs.On {
		return
	}
	w.acls = newACLWorld(w)
	w.stats.ACLs = map[string]int{}
	actor++
	w.clients = append(w.clients, newACLAdmin(w, actor))
	for _, p := range aclPrincipals {
		actor++
		c := newACLClient(w, actor, p)
		w.acls.clients[actor] = c
		w.acls.list = append(w.acls.list, c)
		w.clients = append(w.clients, c)
	}
}

// allows says whether the view lets principal p do op on aclTopic, by the rules the
// workload relies on (allow.everyone.if.no.acl.found is on; the only bindings are
// literal allows for one principal from any host).
func (v *aclView) allows(p string, op acl.Operation) bool {
	if len(v.bindings) == 0 {
		return true
	}
	return v.bindings[aclBinding(p, op)] || v.bindings[aclBinding(p, acl.OpAll)]
}

func (v *aclView) apply(r meta.Record) {
	for _, b := range r.ACLs {
		if b.Type != acl.ResourceTopic || b.Name != aclTopic {
			continue
		}
		switch r.Kind {
		case meta.KindACLsCreated:
			v.bindings[b] = true
		case meta.KindACLsDeleted:
			delete(v.bindings, b)
		}
	}
}

// aclStep is the node's hook before it steps its broker with in (node.step).
func (n *node) aclStep(in broker.Input) {
	a := n.w.acls
	if a == nil {
		return
	}
	v := a.views[n.id]
	switch in := in.(type) {
	case broker.Start:
		v.bindings = map[acl.Binding]bool{}
		for _, r := range in.Snapshot {
			v.apply(r)
		}
		for _, r := range in.Records {
			v.apply(r)
		}
		v.applied = in.LastIndex()
	case broker.MetaApplied:
		v.apply(in.Record)
		v.applied = in.Index
	case broker.Request:
		c := n.w.conns[in.Conn]
		if c == nil || a.clients[c.cl.actor] == nil {
			return
		}
		var op acl.Operation
		switch in.Msg.(type) {
		case *kmsg.ProduceRequest:
			op = acl.OpWrite
		case *kmsg.FetchRequest:
			op = acl.OpRead
		default:
			return
		}
		p := c.cl.principal
		ok := v.allows(p, op)
		a.inflight[[2]uint64{c.id, c.corr[in.ID]}] = &aclReq{node: n.id, gen: n.gen, applied: v.applied,
			principal: p, op: op, allowedIn: ok, allowedOut: ok}
		n.w.tr.note("acl-step", int64(n.id), int64(v.applied), boolInt(ok))
	}
}

// aclReplied is the world's hook when node n replies r (World.reply).
func (w *World) aclReplied(n *node, c *conn, r broker.Reply) {
	if w.acls == nil {
		return
	}
	q := w.acls.inflight[[2]uint64{c.id, c.corr[r.ID]}]
	if q == nil || q.node != n.id {
		return
	}
	q.replied = true
	q.allowedOut = w.acls.views[n.id].allows(q.principal, q.op)
}

// take returns and forgets what was noted about the request key (nil: never stepped).
func (a *aclWorld) take(key [2]uint64) *aclReq {
	q := a.inflight[key]
	delete(a.inflight, key)
	return q
}

// changed counts the admin's grant changes.
func (a *aclWorld) changed(principals []string, grant bool, ok bool) {
	k := "revoke"
	if grant {
		k = "grant"
	}
	if !ok {
		k += "-failed"
	}
	a.w.stats.ACLs[k]++
}

// revokeAnswered checks that a DeleteAcls answered as done (on connection c) had been
// applied where it committed. The node that answered applied it itself when it was the
// controller's node; a node that forwarded it (KIP-590's Envelope, docs/security.md)
// answers when the controller's node did and may apply it a step later, so then some
// node, the controller's, must already refuse every principal revoked.
func (a *aclWorld) revokeAnswered(c *conn, principals []string) {
	if c == nil || !c.n.up || c.n.gen != c.gen {
		return
	}
	for _, p := range principals {
		if !a.views[c.n.id].allows(p, acl.OpWrite) {
			continue
		}
		applied := false
		for id := range a.views {
			if a.views[id] != nil && !a.views[id].allows(p, acl.OpWrite) {
				applied = true
			}
		}
		if !applied {
			a.w.fail("acl", "revoke-answered-unapplied: node %d answered DeleteAcls of %s's "+
				"WRITE on %s and no node had applied it (node %d applied metadata index %d)",
				c.n.id, p, aclTopic, c.n.id, a.views[c.n.id].applied)
		}
	}
}

// verdict checks one answer of an ACL client: refused says it was refused for
// authorization; api names it.
func (a *aclWorld) verdict(cl *aclClient, api string, q *aclReq, refused bool) {
	if q == nil {
		if refused {
			a.w.fail("acl", "%s: %s refused for authorization by no node the checker saw "+
				"step it", cl.name, api)
		}
		return
	}
	strict := q.op == acl.OpWrite // decided in the step it arrives in
	switch {
	case refused && (q.allowedIn && (strict || q.allowedOut)):
		a.w.fail("acl", "refused-while-granted %s: %s by %s refused with "+
			"TOPIC_AUTHORIZATION_FAILED by node %d, whose applied metadata (index %d) "+
			"grants it", cl.name, api, q.principal, q.node, q.applied)
	case !refused && !q.allowedIn && (strict || !q.allowedOut):
		a.w.fail("acl", "served-after-revoke %s: %s by %s served by node %d after it "+
			"applied the revocation (applied metadata index %d when the request arrived)",
			cl.name, api, q.principal, q.node, q.applied)
	}
	if refused {
		a.w.stats.ACLs[api+"-refused"]++
	} else {
		a.w.stats.ACLs[api+"-allowed"]++
	}
}

// checkACLs runs the end-of-run checks (World.check).
func (w *World) checkACLs() {
	a := w.acls
	if a == nil {
		return
	}
	var seen []string
	for v := range a.refused {
		if a.read[v] {
			seen = append(seen, v)
		}
	}
	if len(seen) > 0 {
		sort.Strings(seen)
		w.fail("acl", "refused-write-read: %d values refused for authorization were read "+
			"back from %s, e.g. %q", len(seen), aclTopic, seen[0])
	}
	for _, c := range a.list {
		if !c.quota {
			continue
		}
		q := w.cfg.ACLs.QuotaBytes
		switch {
		case a.quotaSetAt == 0:
		case c.acksAfterQuota == 0:
			w.fail("liveness", "throttled-no-progress %s: no produce acknowledged after its "+
				"quota of %d bytes/s was set", c.name, q)
		case c.throttled == 0 && c.maxIncarnationBytes() > 2*q*11:
			w.fail("quota", "%s: %d bytes acknowledged by one broker incarnation after its "+
				"quota of %d bytes/s was set, and no answer carried ThrottleMillis", c.name,
				c.maxIncarnationBytes(), q)
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
