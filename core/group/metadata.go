package group

// Group metadata records: membership survives a restart, as in Kafka.
//
// The coordinator asks for a GroupMetadata record (Kafka's layout: key v2 = group id;
// value v3 = protocol type, generation, protocol, leader, current state timestamp and
// every member with its ids, client, timeouts, subscription and assignment) whenever a
// generation is settled:
//
//   - the leader's SyncGroup brought the generation's assignment: the record carries
//     it, and the members' SyncGroup answers wait until the record is durable (Kafka
//     answers SyncGroup once the append completes). A failed write answers them with
//     the error and starts a new rebalance. The group stays CompletingRebalance
//     meanwhile, so a crash before the write is durable reloads the previous
//     generation: nobody was told the new one's assignment;
//   - a generation completed without members (the group became Empty): nobody waits;
//   - a static member replaced in a Stable group (its new member id).
//
// The broker takes the record with TakeMetadataWrite after every operation, appends it
// to the group's __consumer_offsets partition and reports the outcome with
// MetadataWritten. At load, Restore rebuilds the group from its latest record: Stable
// with its generation, leader, protocol, members and assignments (Empty without
// members), each member's session starting afresh at load time, so members that are
// still alive keep heartbeating with their id and generation and do not rebalance.
// A nil value (tombstone) deletes the group's metadata: DeleteGroups, or the cleanup of
// an Empty group without offsets (Sweep). The last durable record of each group is kept
// (Durable) so that compaction can rewrite it.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

const (
	groupKeyVersion   = 2
	groupValueVersion = 3 // what Kafka writes since 2.3 (KIP-345's instance ids)
	maxValueVersion   = 4 // the flexible version Kafka may write; read, never written
)

// MetadataWrite is a group metadata record the broker must append for a group.
type MetadataWrite struct {
	Seq   uint64 // per group, increasing: names the write in MetadataWritten
	Value []byte
}

// EncodeGroupKey encodes the record key of a group's metadata.
func EncodeGroupKey(groupID string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = groupKeyVersion, groupID
	return k.AppendTo(nil)
}

// DecodeGroupKey decodes a group metadata key; ok is false for other record kinds.
func DecodeGroupKey(b []byte) (groupID string, ok bool, err error) {
	if len(b) < 2 || int16(binary.BigEndian.Uint16(b)) != groupKeyVersion {
		return "", false, nil
	}
	k := kmsg.NewGroupMetadataKey()
	if err := k.ReadFrom(b); err != nil {
		return "", true, fmt.Errorf("group: metadata key: %w", err)
	}
	return k.Group, true, nil
}

// DecodeGroupValue decodes a non-nil group metadata value of any version Kafka wrote.
func DecodeGroupValue(b []byte) (kmsg.GroupMetadataValue, error) {
	v := kmsg.NewGroupMetadataValue()
	if len(b) < 2 {
		return v, errors.New("group: metadata value: truncated")
	}
	if ver := int16(binary.BigEndian.Uint16(b)); ver < 0 || ver > maxValueVersion {
		return v, fmt.Errorf("group: metadata value version %d not supported", ver)
	}
	if err := v.ReadFrom(b); err != nil {
		return v, fmt.Errorf("group: metadata value: %w", err)
	}
	return v, nil
}

// fitsRecord reports that a string can be stored in a metadata record (int16 length).
func fitsRecord(s string) bool { return len(s) <= math.MaxInt16 }

// metadataValue is the group as its metadata record says it.
func (g *Group) metadataValue(now core.Time) kmsg.GroupMetadataValue {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType, v.Generation = g.protocolType, g.generation
	v.CurrentStateTimestamp = now.Millis()
	if g.state == Empty && g.emptyKnown {
		v.CurrentStateTimestamp = g.emptySince.Millis()
	}
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	for _, m := range g.sortedMembers() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID = m.id, m.instanceID
		vm.ClientID, vm.ClientHost = m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis, vm.SessionTimeoutMillis = m.rebalanceMs, m.sessionMs
		vm.Subscription = nonNilBytes(m.metadataFor(g.protocol))
		vm.Assignment = nonNilBytes(m.assignment)
		v.Members = append(v.Members, vm)
	}
	return v
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// TakeMetadataWrite returns the metadata record the group wants written, if any. Each
// record returned must be reported exactly once to MetadataWritten.
func (g *Group) TakeMetadataWrite(now core.Time) (MetadataWrite, bool) {
	if !g.metaDirty {
		return MetadataWrite{}, false
	}
	g.metaDirty = false
	g.metaSeq++
	g.metaWrites++
	if g.syncPending && g.syncSeq == 0 {
		g.syncSeq = g.metaSeq // the SyncGroup answers wait for this one
	}
	v := g.metadataValue(now)
	return MetadataWrite{Seq: g.metaSeq, Value: v.AppendTo(nil)}, true
}

// MetadataWritten reports the outcome of a write TakeMetadataWrite returned: durable
// (code 0) or failed with the error members should get.
func (g *Group) MetadataWritten(now core.Time, w MetadataWrite, code int16) {
	core.Invariant(g.metaWrites > 0, "G5", "group %s: metadata write %d ended twice",
		g.id, w.Seq)
	g.metaWrites--
	if code == 0 && w.Seq > g.durableSeq {
		g.durable, g.durableSeq = w.Value, w.Seq
	}
	if !g.syncPending || g.syncSeq != w.Seq || g.state != CompletingRebalance {
		return // not what a SyncGroup waits on (or the rebalance was abandoned)
	}
	g.syncPending, g.syncSeq = false, 0
	if code == 0 {
		g.finishSync(now)
		return
	}
	// As Kafka: every waiting member gets the error and the group rebalances.
	for _, m := range g.sortedMembers() {
		m.assignment = nil
		if w := m.syncWaiter; w != nil {
			m.syncWaiter = nil
			m.deadline = now.AddMillis(int64(m.sessionMs))
			w(SyncResult{Err: code})
		}
	}
	g.prepareRebalance(now)
}

// Durable is the group's last durable metadata record, nil when it has none (never
// written, or tombstoned).
func (g *Group) Durable() []byte { return g.durable }

// MetadataDeleted records that a tombstone of the group's metadata is durable.
func (g *Group) MetadataDeleted() { g.durable = nil }

// MetadataWriting reports metadata writes in flight.
func (g *Group) MetadataWriting() bool { return g.metaWrites > 0 }

// Restore rebuilds a group from its latest metadata record at load (v == nil: a
// tombstone). raw is the record's value, kept for compaction. A group that is live
// here (members or a generation that did not come from the log) is left alone: it is
// newer than anything in the log.
func (c *Coordinator) Restore(now core.Time, id string, v *kmsg.GroupMetadataValue,
	raw []byte) {
	old := c.groups[id]
	if old != nil && !old.restored && !(old.idle() && old.generation == 0) {
		return
	}
	g := newGroup(id, &c.cfg, c.newMemberID)
	c.groups[id] = g
	if old != nil {
		old.state = Dead
	}
	if v == nil {
		c.Collect(id) // nothing left but its offsets, if any
		return
	}
	g.restored, g.durable = true, raw
	g.protocolType, g.generation = v.ProtocolType, v.Generation
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	for _, vm := range v.Members {
		if vm.MemberID == "" || g.members[vm.MemberID] != nil {
			continue // not a member Kafka could have written; skip rather than fail
		}
		g.seq++
		m := &member{id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID,
			clientHost: vm.ClientHost, sessionMs: vm.SessionTimeoutMillis,
			rebalanceMs: vm.RebalanceTimeoutMillis, assignment: vm.Assignment, seq: g.seq,
			protocols: []Protocol{{Name: g.protocol, Metadata: vm.Subscription}}}
		if m.rebalanceMs <= 0 {
			m.rebalanceMs = m.sessionMs // value v0 has no rebalance timeout
		}
		m.deadline = now.AddMillis(int64(m.sessionMs)) // sessions restart at load
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	c.restoreState(g, v, now)
}

// restoreState settles a restored group's state: Stable with members, else Empty.
func (c *Coordinator) restoreState(g *Group, v *kmsg.GroupMetadataValue, now core.Time) {
	if len(g.members) == 0 || g.protocol == "" {
		for _, m := range g.sortedMembers() {
			g.dropMember(m)
		}
		g.state, g.protocol, g.leader = Empty, "", ""
		if v.CurrentStateTimestamp >= 0 && v.Version >= 2 {
			g.emptySince = core.Time(0).AddMillis(v.CurrentStateTimestamp)
			g.emptyKnown = g.emptySince <= now // never in the future
		}
		return
	}
	g.state = Stable
	if v.Leader != nil && g.members[*v.Leader] != nil {
		g.leader = *v.Leader
	} else {
		g.leader = g.sortedMembers()[0].id
	}
}

// checkRecordable says whether a join's strings fit a metadata record (int16
// lengths): INVALID_REQUEST when they do not, as the group could not be persisted.
func checkRecordable(req JoinRequest) int16 {
	ok := fitsRecord(req.MemberID) && fitsRecord(req.ClientID) &&
		fitsRecord(req.ClientHost) && fitsRecord(req.ProtocolType) &&
		fitsRecord(req.ClientID+"-00000000-0000-0000-0000-000000000000")
	if req.InstanceID != nil {
		ok = ok && fitsRecord(*req.InstanceID+"-00000000-0000-0000-0000-000000000000")
	}
	for _, p := range req.Protocols {
		ok = ok && fitsRecord(p.Name)
	}
	if !ok {
		return kerr.InvalidRequest.Code
	}
	return 0
}
