package sim

// Coordinator terms. The group checks (linearizability/groups.go) compare answers
// "of one coordinator incarnation" and order incarnations: a later one restores what an
// earlier one stored. A single node's incarnation is its process (conn.gen). In a
// cluster a group's coordinator is the leader of its __consumer_offsets partition, and
// a coordinator's term is that leadership: the node leads the partition in one leader
// epoch, loads the group from the log and serves it until it stops leading. So an
// answer's incarnation in a clustered world is its term, taken from the answering
// broker when it replies (Broker.CoordinatorEpoch): the leader epoch in the high bits
// (terms are ordered as leadership moved), then the node and its process incarnation
// (a node leads an epoch at most once; they only tell apart what should never be
// equal). An answer from a node that does not coordinate the group (an error) gets 0.

// noteTerm records, on the call a group request of a clustered world is waiting in,
// the coordinator term of node n as it replies to request id on c.
func (w *World) noteTerm(n *node, c *conn, id uint64) {
	corr, ok := c.corr[id]
	if !ok || c.cl == nil {
		return
	}
	for _, cl := range c.cl.calls {
		if cl.c == c && cl.corr == corr && cl.group != "" {
			cl.term = coordTerm(n, cl.group)
			return
		}
	}
}

// coordTerm is n's coordinator term for group now (0: it does not coordinate it).
func coordTerm(n *node, group string) uint64 {
	if n.b == nil {
		return 0
	}
	epoch, ok := n.b.CoordinatorEpoch(group)
	if !ok {
		return 0
	}
	return uint64(epoch+1)<<32 | uint64(n.id+1)<<24 | n.gen&0xffffff
}
