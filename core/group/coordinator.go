package group

import (
	"fmt"
	"sort"

	"github.com/sluicemq/sluice/core"
)

// Coordinator holds every group of the node and their committed offsets.
//
// A group exists while it has members, ids handed out, or committed offsets; a group
// that has none of these is forgotten (Kafka forgets it at its next cleanup). Offsets
// only change through ApplyOffset, which the broker calls once the record that carries
// the change is durable, so the table never shows an offset a crash could take back.
type Coordinator struct {
	cfg     Config
	rnd     core.Rand
	groups  map[string]*Group
	offsets map[string]map[core.TopicPartition]Offset
	// writing counts the offset writes not yet durable, per group and partition:
	// expiry leaves those partitions alone (expiry.go).
	writing map[string]map[core.TopicPartition]int
}

// NewCoordinator returns a coordinator without groups.
func NewCoordinator(cfg Config, rnd core.Rand) *Coordinator {
	return &Coordinator{cfg: cfg, rnd: rnd, groups: map[string]*Group{},
		offsets: map[string]map[core.TopicPartition]Offset{},
		writing: map[string]map[core.TopicPartition]int{}}
}

// Group returns the group with this id, or nil.
func (c *Coordinator) Group(id string) *Group { return c.groups[id] }

// GetOrCreate returns the group with this id, creating it Empty.
func (c *Coordinator) GetOrCreate(id string) *Group {
	g := c.groups[id]
	if g == nil {
		g = newGroup(id, &c.cfg, c.newMemberID)
		c.groups[id] = g
	}
	return g
}

// Collect forgets the group if nothing is left in it and it never had a generation.
// Call it after every operation on a group.
//
// A group that had a generation stays, Empty, until the next expiry pass (Sweep), as
// Kafka keeps it until its next cleanup: members that all left and come back continue
// its generations instead of starting over at 1, so while the coordinator runs one
// generation number names one assignment.
func (c *Coordinator) Collect(id string) {
	if g := c.groups[id]; g != nil && g.generation == 0 {
		c.forgetIdle(g)
	}
}

// Sweep forgets every group left with nothing in it: no members, no ids handed out, no
// committed offsets. The broker calls it at every expiry pass. Groups whose metadata is
// stored are not forgotten but returned (sorted): the broker tombstones their record
// and calls Forget once the tombstone is durable, so a restart does not bring them back.
func (c *Coordinator) Sweep() (tombstone []string) {
	for _, id := range c.GroupIDs() {
		g := c.groups[id]
		switch {
		case !g.idle() || len(c.offsets[id]) > 0 || g.metaWrites > 0:
		case g.durable != nil:
			tombstone = append(tombstone, id)
		default:
			c.forgetIdle(g)
		}
	}
	return tombstone
}

// Forget records that the tombstone of a swept group's metadata is durable, and forgets
// the group unless something arrived in it meanwhile.
func (c *Coordinator) Forget(id string) {
	if g := c.groups[id]; g != nil {
		g.MetadataDeleted()
		c.forgetIdle(g)
	}
}

func (c *Coordinator) forgetIdle(g *Group) {
	if g.idle() && len(c.offsets[g.id]) == 0 && g.durable == nil && g.metaWrites == 0 {
		g.state = Dead
		delete(c.groups, g.id)
	}
}

// Remove forgets an empty group and its offsets (DeleteGroups, once the tombstones are
// durable). It reports false, changing nothing, when the group has members again.
func (c *Coordinator) Remove(id string) bool {
	g := c.groups[id]
	if g != nil && (g.state != Empty || len(g.members) > 0) {
		return false
	}
	if g != nil {
		g.state, g.durable = Dead, nil
	}
	delete(c.groups, id)
	delete(c.offsets, id)
	return true
}

// GroupIDs returns the ids of every known group, sorted.
func (c *Coordinator) GroupIDs() []string {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Offset returns the committed offset of a partition for a group.
func (c *Coordinator) Offset(groupID string, tp core.TopicPartition) (Offset, bool) {
	o, ok := c.offsets[groupID][tp]
	return o, ok
}

// PartitionOffset is one committed offset with its partition.
type PartitionOffset struct {
	TP core.TopicPartition
	Offset
}

// Offsets returns every committed offset of a group, sorted by partition.
func (c *Coordinator) Offsets(groupID string) []PartitionOffset {
	m := c.offsets[groupID]
	out := make([]PartitionOffset, 0, len(m))
	for tp, o := range m {
		out = append(out, PartitionOffset{TP: tp, Offset: o})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TP.Less(out[j].TP) })
	return out
}

// ApplyOffset records a durable commit (o != nil) or deletion (o == nil). A commit
// creates its group if needed (offsets of a group without members, or replayed at
// start); a deletion may leave the group to be forgotten.
func (c *Coordinator) ApplyOffset(groupID string, tp core.TopicPartition, o *Offset) {
	if o == nil {
		if m := c.offsets[groupID]; m != nil {
			delete(m, tp)
			if len(m) == 0 {
				delete(c.offsets, groupID)
			}
		}
		c.Collect(groupID)
		return
	}
	c.GetOrCreate(groupID)
	m := c.offsets[groupID]
	if m == nil {
		m = map[core.TopicPartition]Offset{}
		c.offsets[groupID] = m
	}
	m[tp] = *o
}

// newMemberID returns prefix-UUID, as Kafka names members, drawn from the seeded
// randomness so that a simulated run names members the same way every time.
func (c *Coordinator) newMemberID(prefix string) string {
	a, b := uint64(c.rnd.Int63()), uint64(c.rnd.Int63())
	return fmt.Sprintf("%s-%08x-%04x-%04x-%04x-%012x", prefix, a>>32, (a>>16)&0xffff,
		a&0xffff, b>>48, b&0xffffffffffff)
}

// OffsetsWhere returns, by group id, every partition with a committed offset or an
// offset write in flight that drop selects (sorted). It changes nothing: the broker
// writes tombstones for them when a topic is deleted, as Kafka removes a deleted
// topic's offsets from every group, and applies them once durable. In-flight writes are
// included because they were appended before the tombstones and become durable first:
// left out, such a commit would outlive its topic. A group may have a write in flight
// before it exists (a first commit), so ids come from both tables.
func (c *Coordinator) OffsetsWhere(drop func(tp core.TopicPartition) bool) []Expired {
	sel := map[string]map[core.TopicPartition]bool{}
	add := func(id string, tp core.TopicPartition) {
		if !drop(tp) {
			return
		}
		if sel[id] == nil {
			sel[id] = map[core.TopicPartition]bool{}
		}
		sel[id][tp] = true
	}
	for id, m := range c.offsets {
		for tp := range m {
			add(id, tp)
		}
	}
	for id, m := range c.writing {
		for tp := range m {
			add(id, tp)
		}
	}
	out := make([]Expired, 0, len(sel))
	for id, m := range sel {
		e := Expired{Group: id}
		for tp := range m {
			e.TPs = append(e.TPs, tp)
		}
		sort.Slice(e.TPs, func(i, j int) bool { return e.TPs[i].Less(e.TPs[j]) })
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}
