package group

import (
	"sort"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/probe"
)

// State is a group's state, named as Kafka names it in DescribeGroups and ListGroups.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	default:
		return "Dead"
	}
}

// Config holds the broker settings the coordinator enforces.
type Config struct {
	// MinSessionTimeoutMs and MaxSessionTimeoutMs bound the session timeout a member may
	// ask for (group.min.session.timeout.ms, group.max.session.timeout.ms).
	MinSessionTimeoutMs int32
	MaxSessionTimeoutMs int32
	// InitialRebalanceDelayMs is how long the first rebalance of an empty group waits
	// for more members before completing (group.initial.rebalance.delay.ms), so that a
	// fleet starting together gets one rebalance rather than one per member.
	InitialRebalanceDelayMs int32
	// MaxSize bounds the members of one group (group.max.size).
	MaxSize int
	// OffsetsRetentionMs is how long the committed offsets of a group without members
	// are kept (offsets.retention.minutes, KIP-211; expiry.go).
	OffsetsRetentionMs int64
	// Probes counts the code probes the groups pass (nil: none; package probe).
	Probes *probe.Set
}

// DefaultConfig returns Kafka's defaults, except group.max.size, which Kafka leaves
// unbounded.
func DefaultConfig() Config {
	return Config{MinSessionTimeoutMs: 6000, MaxSessionTimeoutMs: 1_800_000,
		InitialRebalanceDelayMs: 3000, MaxSize: 10_000,
		OffsetsRetentionMs: 7 * 24 * 60 * 60 * 1000}
}

// Protocol is one assignment protocol a member supports, with its opaque metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

// member is one joined member of a group.
type member struct {
	id          string
	instanceID  *string // static membership (KIP-345)
	clientID    string
	clientHost  string
	protocols   []Protocol
	sessionMs   int32
	rebalanceMs int32
	assignment  []byte
	seq         uint64 // join order: the leader is the longest-standing member
	joinWaiter  func(JoinResult)
	syncWaiter  func(SyncResult)
	deadline    core.Time // session expiry, unless a request of it is parked
}

// keptAlive reports that the member waits on the coordinator, which then owes it an
// answer: its session does not run out meanwhile (the rebalance timeout bounds the wait).
func (m *member) keptAlive() bool { return m.joinWaiter != nil || m.syncWaiter != nil }

// Group is one consumer group. Create groups through a Coordinator.
type Group struct {
	id           string
	cfg          *Config
	newMemberID  func(prefix string) string
	state        State
	generation   int32
	protocolType string
	protocol     string // chosen for the current generation; "" when Empty
	leader       string
	members      map[string]*member
	static       map[string]string    // instance id → member id
	pending      map[string]core.Time // ids handed out with MEMBER_ID_REQUIRED → expiry
	seq          uint64

	rebalanceDeadline core.Time // PreparingRebalance completes by then whoever rejoined
	delayUntil        core.Time // initial rebalance delay of a group that was empty
	syncDeadline      core.Time // CompletingRebalance: the leader must sync by then

	// When the group last became Empty after having members (Kafka's
	// currentStateTimestamp, KIP-211): offset retention counts from it. emptyKnown is
	// false for groups that never had members here (simple consumers, and groups
	// rebuilt from offsets without a metadata record; expiry.go). A restored Empty
	// group takes it from its record (metadata.go).
	emptySince core.Time
	emptyKnown bool
	// recovered marks a group rebuilt from the offsets topic whose empty time is
	// unknown: its latest commit stands in for it.
	recovered bool

	// Persistence of the group's metadata (metadata.go).
	metaDirty   bool   // a metadata record is wanted (TakeMetadataWrite)
	metaSeq     uint64 // writes taken so far
	metaWrites  int    // writes taken and not yet reported
	syncPending bool   // the leader's assignment waits for its record to be durable
	syncSeq     uint64 // the write it waits on; 0 until taken
	durable     []byte // the last durable record's value; nil: none (or tombstoned)
	durableSeq  uint64
	restored    bool // rebuilt from a metadata record at load
}

func newGroup(id string, cfg *Config, newMemberID func(string) string) *Group {
	return &Group{id: id, cfg: cfg, newMemberID: newMemberID,
		members: map[string]*member{}, static: map[string]string{},
		pending: map[string]core.Time{}}
}

// ID is the group id.
func (g *Group) ID() string { return g.id }

// State is the group's current state.
func (g *Group) State() State { return g.state }

// Generation is the current generation id (0 before the first rebalance completed).
func (g *Group) Generation() int32 { return g.generation }

// Leader is the leader's member id, "" when the group has no generation in progress.
func (g *Group) Leader() string { return g.leader }

// ProtocolType is the protocol type the members use ("consumer" for consumers).
func (g *Group) ProtocolType() string { return g.protocolType }

// Protocol is the assignment protocol chosen for the current generation.
func (g *Group) Protocol() string { return g.protocol }

// NumMembers counts joined members (not ids merely handed out).
func (g *Group) NumMembers() int { return len(g.members) }

// idle reports a group with nothing in it: no members, no ids handed out.
func (g *Group) idle() bool {
	return g.state == Empty && len(g.members) == 0 && len(g.pending) == 0
}

// sortedMembers returns the members in join order, so every listing, every reply
// order and the leader choice are independent of map iteration.
func (g *Group) sortedMembers() []*member {
	ms := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		ms = append(ms, m)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].seq < ms[j].seq })
	return ms
}

// maxRebalanceMs is how long a rebalance may wait for members to rejoin or sync.
func (g *Group) maxRebalanceMs() int64 {
	var ms int32
	for _, m := range g.members {
		ms = max(ms, m.rebalanceMs)
	}
	return int64(ms)
}

// fenced reports a static member whose instance id now belongs to another member id.
func (g *Group) fenced(memberID string, instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	id, ok := g.static[*instanceID]
	return ok && id != memberID
}

// MemberDescription is one member as DescribeGroups shows it.
type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte // for the chosen protocol; only while Stable, as Kafka does
	Assignment []byte // only while Stable
}

// Description is a group as DescribeGroups shows it.
type Description struct {
	State        State
	ProtocolType string
	Protocol     string // only while Stable
	Members      []MemberDescription
}

// Describe returns the group's state and members in join order.
func (g *Group) Describe() Description {
	d := Description{State: g.state, ProtocolType: g.protocolType}
	stable := g.state == Stable
	if stable {
		d.Protocol = g.protocol
	}
	for _, m := range g.sortedMembers() {
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID,
			ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata = m.metadataFor(g.protocol)
			md.Assignment = m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}
