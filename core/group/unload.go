package group

import "sort"

// Unloading: a coordinator that stops leading a group's __consumer_offsets partition
// forgets the group, its members and its committed offsets, as Kafka's coordinator
// unloads the groups of a partition it no longer leads. The new leader rebuilds them
// from the partition's log (Restore, ApplyOffset). Members waiting on a JoinGroup or
// SyncGroup are answered with the code given (NOT_COORDINATOR), so that they find the
// new coordinator and rejoin there.

// Unload forgets every group that in selects, with its offsets, answering its parked
// requests with code first. The broker ends the group's offset writes before (their
// outcome goes to the requests that made them). It returns the ids unloaded, sorted.
func (c *Coordinator) Unload(in func(id string) bool, code int16) []string {
	ids := map[string]bool{}
	for id := range c.groups {
		if in(id) {
			ids[id] = true
		}
	}
	for id := range c.offsets {
		if in(id) {
			ids[id] = true
		}
	}
	out := make([]string, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	sort.Strings(out)
	for _, id := range out {
		if g := c.groups[id]; g != nil {
			g.unload(code)
		}
		delete(c.groups, id)
		delete(c.offsets, id)
		delete(c.writing, id)
	}
	return out
}

// unload answers every parked request of the group with code and marks it Dead: the
// callbacks the broker holds for it (metadata writes) find it gone.
func (g *Group) unload(code int16) {
	for _, m := range g.sortedMembers() {
		if w := m.joinWaiter; w != nil {
			m.joinWaiter = nil
			w(joinError(code, m.id))
		}
		if w := m.syncWaiter; w != nil {
			m.syncWaiter = nil
			w(SyncResult{Err: code})
		}
	}
	g.state = Dead
}
