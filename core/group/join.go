package group

import (
	"bytes"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core"
)

// JoinRequest is a JoinGroup request as the coordinator needs it.
type JoinRequest struct {
	MemberID     string // "" for a member joining for the first time
	InstanceID   *string
	ClientID     string
	ClientHost   string
	ProtocolType string
	Protocols    []Protocol // in the member's order of preference
	SessionMs    int32
	RebalanceMs  int32
	// RequireKnownMemberID: JoinGroup v4+, where a new member is first handed an id with
	// MEMBER_ID_REQUIRED and joins again with it (KIP-394).
	RequireKnownMemberID bool
}

// JoinResult is the answer to a JoinGroup.
type JoinResult struct {
	Err          int16
	Generation   int32
	ProtocolType string
	Protocol     string
	LeaderID     string
	MemberID     string
	Members      []JoinedMember // the leader's answer only
}

// JoinedMember is one member as the leader sees it: its metadata for the chosen protocol.
type JoinedMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

func joinError(code int16, memberID string) JoinResult {
	return JoinResult{Err: code, Generation: -1, MemberID: memberID}
}

// Join handles a JoinGroup. reply is called exactly once: now, or when the rebalance
// the join takes part in completes.
func (g *Group) Join(now core.Time, req JoinRequest, reply func(JoinResult)) {
	if code := g.checkJoin(req); code != 0 {
		reply(joinError(code, req.MemberID))
		return
	}
	if req.MemberID == "" {
		g.joinNew(now, req, reply)
		return
	}
	g.joinKnown(now, req, reply)
}

func (g *Group) checkJoin(req JoinRequest) int16 {
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable.Code
	case req.SessionMs < g.cfg.MinSessionTimeoutMs || req.SessionMs > g.cfg.MaxSessionTimeoutMs:
		g.hit(pJoinBadSession)
		return kerr.InvalidSessionTimeout.Code
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		g.hit(pJoinInconsistent)
		return kerr.InconsistentGroupProtocol.Code
	case checkRecordable(req) != 0:
		return checkRecordable(req)
	case len(g.members) > 0 &&
		(req.ProtocolType != g.protocolType || !g.supportsOneOf(req.Protocols)):
		g.hit(pJoinInconsistent)
		return kerr.InconsistentGroupProtocol.Code
	case req.MemberID == "" && !g.knownInstance(req.InstanceID) &&
		len(g.members)+len(g.pending) >= g.cfg.MaxSize:
		// Handed-out ids count too: a client looping on MEMBER_ID_REQUIRED cannot grow
		// the group without bound.
		g.hit(pJoinMaxSize)
		return kerr.GroupMaxSizeReached.Code
	}
	return 0
}

// knownInstance reports a static member that is already in the group (a rejoin under a
// new id replaces it rather than adding one).
func (g *Group) knownInstance(instanceID *string) bool {
	if instanceID == nil {
		return false
	}
	_, ok := g.static[*instanceID]
	return ok
}

// joinNew handles a member without an id.
func (g *Group) joinNew(now core.Time, req JoinRequest, reply func(JoinResult)) {
	if req.InstanceID != nil {
		id := g.newMemberID(*req.InstanceID)
		if old, ok := g.static[*req.InstanceID]; ok {
			g.replaceStatic(now, g.members[old], id, req, reply)
			return
		}
		// Static members skip MEMBER_ID_REQUIRED: their instance id already names them.
		g.addMember(now, id, req, reply)
		return
	}
	id := g.newMemberID(req.ClientID)
	if req.RequireKnownMemberID {
		g.pending[id] = now.AddMillis(int64(req.SessionMs))
		g.hit(pJoinMemberIDRequired)
		reply(joinError(kerr.MemberIDRequired.Code, id))
		return
	}
	g.addMember(now, id, req, reply)
}

// joinKnown handles a member that names its id.
func (g *Group) joinKnown(now core.Time, req JoinRequest, reply func(JoinResult)) {
	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		g.addMember(now, req.MemberID, req, reply)
		return
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		g.hit(pJoinUnknownMember)
		reply(joinError(kerr.UnknownMemberID.Code, req.MemberID))
		return
	case g.fenced(req.MemberID, req.InstanceID):
		reply(joinError(kerr.FencedInstanceID.Code, req.MemberID))
		return
	}
	same := sameProtocols(m.protocols, req.Protocols)
	switch g.state {
	case PreparingRebalance:
		g.updateMember(m, req, reply)
		g.tryCompleteJoin(now)
	case CompletingRebalance, Stable:
		// A follower that lost its answer (or rejoins without change) gets the current
		// generation again; a changed subscription or a rejoining leader (which wants to
		// reassign) starts a rebalance.
		if same && (g.state == CompletingRebalance || m.id != g.leader) {
			m.deadline = now.AddMillis(int64(m.sessionMs))
			g.hit(pJoinCurrentGeneration)
			reply(g.joinResult(m))
			return
		}
		g.hit(pJoinStartsRebalance)
		g.updateMember(m, req, reply)
		g.prepareRebalance(now)
	default:
		reply(joinError(kerr.UnknownMemberID.Code, req.MemberID))
	}
}

// addMember adds a member that waits for the rebalance its arrival starts.
func (g *Group) addMember(now core.Time, id string, req JoinRequest, reply func(JoinResult)) {
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.seq++
	m := &member{id: id, instanceID: req.InstanceID, seq: g.seq}
	g.members[id] = m
	if req.InstanceID != nil {
		g.static[*req.InstanceID] = id
	}
	g.updateMember(m, req, reply)
	if g.state == PreparingRebalance {
		g.extendInitialDelay(now)
		g.tryCompleteJoin(now)
		return
	}
	g.prepareRebalance(now)
}

// replaceStatic gives a static member that rejoined without its id a new id in place of
// the old one (KIP-345). The old id is fenced: anything it still waits on is answered
// FENCED_INSTANCE_ID. A follower whose subscription did not change keeps its assignment
// without a rebalance.
func (g *Group) replaceStatic(now core.Time, old *member, id string, req JoinRequest,
	reply func(JoinResult)) {
	if old.joinWaiter != nil {
		w := old.joinWaiter
		old.joinWaiter = nil
		w(joinError(kerr.FencedInstanceID.Code, old.id))
	}
	if old.syncWaiter != nil {
		w := old.syncWaiter
		old.syncWaiter = nil
		w(SyncResult{Err: kerr.FencedInstanceID.Code})
	}
	delete(g.members, old.id)
	m := &member{id: id, instanceID: req.InstanceID, seq: old.seq, assignment: old.assignment,
		protocols: old.protocols}
	g.members[id] = m
	g.static[*req.InstanceID] = id
	wasLeader := g.leader == old.id
	if wasLeader {
		g.leader = id
	}
	if g.state == Stable && !wasLeader && sameProtocols(old.protocols, req.Protocols) {
		g.updateMember(m, req, nil)
		m.deadline = now.AddMillis(int64(m.sessionMs))
		g.metaDirty = true // the new member id (not awaited, unlike Kafka)
		reply(g.joinResult(m))
		return
	}
	g.updateMember(m, req, reply)
	if g.state == PreparingRebalance {
		g.tryCompleteJoin(now)
		return
	}
	g.prepareRebalance(now)
}

// updateMember records what a join says about its member and parks reply (nil: the
// caller answers itself). A join parked earlier for the same member is answered first:
// the client gave up on it.
func (g *Group) updateMember(m *member, req JoinRequest, reply func(JoinResult)) {
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.protocols = req.Protocols
	m.sessionMs = req.SessionMs
	m.rebalanceMs = req.RebalanceMs
	if m.rebalanceMs <= 0 {
		m.rebalanceMs = req.SessionMs // JoinGroup v0 has no rebalance timeout
	}
	if reply == nil {
		return
	}
	if m.joinWaiter != nil {
		w := m.joinWaiter
		m.joinWaiter = nil
		g.hit(pJoinSuperseded)
		w(joinError(kerr.RebalanceInProgress.Code, m.id))
	}
	m.joinWaiter = reply
}

// prepareRebalance starts a rebalance: every member must rejoin.
func (g *Group) prepareRebalance(now core.Time) {
	if g.state == CompletingRebalance {
		// The assignment being distributed is void (even if its record is being
		// written: nobody was told it); members waiting for it rejoin.
		// A member that waited on us was alive until now: its session restarts.
		g.syncPending, g.syncSeq = false, 0
		g.hit(pRebalanceAbandonsSync)
		for _, m := range g.sortedMembers() {
			m.assignment = nil
			if w := m.syncWaiter; w != nil {
				m.syncWaiter = nil
				m.deadline = now.AddMillis(int64(m.sessionMs))
				w(SyncResult{Err: kerr.RebalanceInProgress.Code})
			}
		}
	}
	wasEmpty := g.state == Empty
	g.state = PreparingRebalance
	g.rebalanceDeadline = now.AddMillis(g.maxRebalanceMs())
	g.delayUntil = now
	if wasEmpty {
		g.hit(pRebalanceInitialDelay)
		g.delayUntil = min(now.AddMillis(int64(g.cfg.InitialRebalanceDelayMs)),
			g.rebalanceDeadline)
	}
	g.tryCompleteJoin(now)
}

// extendInitialDelay pushes the initial delay back when a member arrives during it, up
// to the rebalance timeout, as Kafka does.
func (g *Group) extendInitialDelay(now core.Time) {
	if g.delayUntil > now {
		g.delayUntil = min(now.AddMillis(int64(g.cfg.InitialRebalanceDelayMs)),
			g.rebalanceDeadline)
	}
}

// allJoined reports that every member rejoined and no handed-out id is still expected.
func (g *Group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinWaiter == nil {
			return false
		}
	}
	return true
}

func (g *Group) tryCompleteJoin(now core.Time) {
	if g.state != PreparingRebalance {
		return
	}
	if (g.allJoined() && now >= g.delayUntil) || now >= g.rebalanceDeadline {
		g.completeJoin(now)
	}
}

// completeJoin ends the join phase: members that did not rejoin are dropped, the
// generation advances, a leader and a protocol are chosen and every waiting member
// gets its answer.
func (g *Group) completeJoin(now core.Time) {
	for _, m := range g.sortedMembers() {
		if m.joinWaiter == nil {
			g.hit(pRebalanceDropsLate)
			g.dropMember(m)
		}
	}
	if g.generation == 0 || !mutantOn("no-generation-bump") {
		g.generation++
	}
	if len(g.members) == 0 {
		g.hit(pRebalanceToEmpty)
		g.state, g.protocol, g.leader = Empty, "", ""
		g.emptySince, g.emptyKnown = now, true
		g.metaDirty = true // Kafka stores the empty generation too
		return
	}
	ms := g.sortedMembers()
	if g.members[g.leader] == nil {
		g.leader = ms[0].id
	}
	g.protocol = g.selectProtocol()
	g.state = CompletingRebalance
	g.syncDeadline = now.AddMillis(g.maxRebalanceMs())
	waiters := make([]func(JoinResult), len(ms))
	for i, m := range ms {
		m.deadline = now.AddMillis(int64(m.sessionMs))
		waiters[i], m.joinWaiter = m.joinWaiter, nil
	}
	// Answer only once the state is final: callbacks see a consistent group.
	for i, m := range ms {
		waiters[i](g.joinResult(m))
	}
}

// joinResult is the current generation as member m is told it.
func (g *Group) joinResult(m *member) JoinResult {
	r := JoinResult{Generation: g.generation, ProtocolType: g.protocolType,
		Protocol: g.protocol, LeaderID: g.leader, MemberID: m.id}
	if m.id == g.leader {
		for _, o := range g.sortedMembers() {
			r.Members = append(r.Members, JoinedMember{MemberID: o.id,
				InstanceID: o.instanceID, Metadata: o.metadataFor(g.protocol)})
		}
	}
	return r
}

func sameProtocols(a, b []Protocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Metadata, b[i].Metadata) {
			return false
		}
	}
	return true
}
