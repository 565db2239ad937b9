package group

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core"
)

// SyncRequest is a SyncGroup request. Assignments are only read from the leader.
type SyncRequest struct {
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string // v5+: checked against the group's when set
	Protocol     *string
	Assignments  []Assignment
}

// Assignment is the leader's assignment for one member.
type Assignment struct {
	MemberID string
	Data     []byte
}

// SyncResult is the answer to a SyncGroup.
type SyncResult struct {
	Err          int16
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// Sync handles a SyncGroup. reply is called exactly once: now, or once the leader's
// assignment arrives (or the rebalance is abandoned).
func (g *Group) Sync(now core.Time, req SyncRequest, reply func(SyncResult)) {
	m := g.members[req.MemberID]
	code := int16(0)
	switch {
	case g.fenced(req.MemberID, req.InstanceID):
		code = kerr.FencedInstanceID.Code
	case m == nil:
		code = kerr.UnknownMemberID.Code
		g.hit(pSyncUnknownMember)
	case req.Generation != g.generation:
		code = kerr.IllegalGeneration.Code
		g.hit(pSyncIllegalGeneration)
	case (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) ||
		(req.Protocol != nil && *req.Protocol != g.protocol):
		code = kerr.InconsistentGroupProtocol.Code
	case g.state == PreparingRebalance:
		code = kerr.RebalanceInProgress.Code
		g.hit(pSyncRebalancing)
	case g.state != CompletingRebalance && g.state != Stable:
		code = kerr.UnknownMemberID.Code
	}
	if code != 0 {
		reply(SyncResult{Err: code})
		return
	}
	if g.state == Stable {
		g.hit(pSyncStable)
		m.deadline = now.AddMillis(int64(m.sessionMs))
		reply(g.syncResult(m))
		return
	}
	if w := m.syncWaiter; w != nil {
		m.syncWaiter = nil
		g.hit(pSyncSuperseded)
		w(SyncResult{Err: kerr.RebalanceInProgress.Code}) // superseded by this retry
	}
	m.syncWaiter = reply
	if m.id == g.leader && !g.syncPending {
		g.completeSync(now, req.Assignments)
	}
}

// completeSync stores the leader's assignments and asks for the metadata record that
// carries them (metadata.go). The group turns Stable and the members get their
// assignments once that record is durable (finishSync); a leader's retry meanwhile
// just waits for the same write.
func (g *Group) completeSync(now core.Time, assignments []Assignment) {
	for _, m := range g.members {
		m.assignment = nil
	}
	for _, a := range assignments {
		if m := g.members[a.MemberID]; m != nil {
			m.assignment = a.Data
		}
	}
	g.syncPending, g.syncSeq, g.metaDirty = true, 0, true
	if mutantOn("sync-before-durable") {
		g.syncPending = false
		g.finishSync(now)
	}
}

// finishSync makes the group Stable once the generation's record is durable and answers
// every member waiting for its assignment. Members that have not asked yet get theirs
// when they do.
func (g *Group) finishSync(now core.Time) {
	g.state = Stable
	var waiting []*member
	for _, m := range g.sortedMembers() {
		if m.syncWaiter != nil {
			m.deadline = now.AddMillis(int64(m.sessionMs))
			waiting = append(waiting, m)
		}
	}
	for _, m := range waiting {
		w := m.syncWaiter
		m.syncWaiter = nil
		w(g.syncResult(m))
	}
}

func (g *Group) syncResult(m *member) SyncResult {
	return SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol,
		Assignment: m.assignment}
}

// Heartbeat keeps a member's session alive and tells it whether to rejoin.
func (g *Group) Heartbeat(now core.Time, memberID string, instanceID *string,
	generation int32) int16 {
	m := g.members[memberID]
	switch {
	case g.fenced(memberID, instanceID):
		return kerr.FencedInstanceID.Code
	case m == nil || g.state == Empty:
		g.hit(pHeartbeatUnknown)
		return kerr.UnknownMemberID.Code
	case generation != g.generation:
		g.hit(pHeartbeatIllegalGen)
		return kerr.IllegalGeneration.Code
	}
	m.deadline = now.AddMillis(int64(m.sessionMs))
	if g.state == PreparingRebalance {
		g.hit(pHeartbeatRebalancing)
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// Leave removes a member at its request. A static member may be named by its instance
// id alone (memberID ""), as admin clients do.
func (g *Group) Leave(now core.Time, memberID string, instanceID *string) int16 {
	if memberID == "" && instanceID != nil {
		id, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		memberID = id
	}
	if g.fenced(memberID, instanceID) {
		return kerr.FencedInstanceID.Code
	}
	if _, ok := g.pending[memberID]; ok {
		delete(g.pending, memberID)
		g.hit(pLeavePending)
		g.tryCompleteJoin(now)
		return 0
	}
	m := g.members[memberID]
	if m == nil {
		g.hit(pLeaveUnknown)
		return kerr.UnknownMemberID.Code
	}
	g.hit(pLeaveMember)
	g.removeMember(now, m)
	return 0
}

// CheckCommit decides whether an OffsetCommit with these member fields may commit, and
// counts a valid one as a heartbeat. Generation -1 with no member is a commit from
// outside group management, allowed only while the group has no members.
func (g *Group) CheckCommit(now core.Time, generation int32, memberID string,
	instanceID *string) int16 {
	m := g.members[memberID]
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable.Code
	case g.fenced(memberID, instanceID):
		return kerr.FencedInstanceID.Code
	case generation < 0 && g.state == Empty:
		g.hit(pCommitSimple)
		return 0
	case g.state == CompletingRebalance:
		// The member knows the new generation but has no assignment yet.
		g.hit(pCommitRebalancing)
		return kerr.RebalanceInProgress.Code
	case m == nil:
		g.hit(pCommitUnknownMember)
		return kerr.UnknownMemberID.Code
	case generation != g.generation && !mutantOn("stale-commit"):
		g.hit(pCommitIllegalGen)
		return kerr.IllegalGeneration.Code
	}
	m.deadline = now.AddMillis(int64(m.sessionMs))
	return 0
}

// removeMember drops m and starts (or advances) the rebalance its absence requires.
func (g *Group) removeMember(now core.Time, m *member) {
	if w := m.joinWaiter; w != nil {
		m.joinWaiter = nil
		w(joinError(kerr.UnknownMemberID.Code, m.id))
	}
	if w := m.syncWaiter; w != nil {
		m.syncWaiter = nil
		w(SyncResult{Err: kerr.UnknownMemberID.Code})
	}
	g.dropMember(m)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(now)
	case PreparingRebalance:
		g.tryCompleteJoin(now)
	}
}

// dropMember forgets m; the caller has answered whatever it waited on.
func (g *Group) dropMember(m *member) {
	core.Invariant(!m.keptAlive(), "G1", "group %s: member %s dropped with a request parked",
		g.id, m.id)
	delete(g.members, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
	}
}

// Tick applies everything due at now: expired sessions and handed-out ids, the end of
// the initial delay, rebalance and sync timeouts.
func (g *Group) Tick(now core.Time) {
	for id, at := range g.pending {
		if at <= now {
			delete(g.pending, id)
		}
	}
	for _, m := range g.sortedMembers() {
		if g.members[m.id] == m && !m.keptAlive() && m.deadline <= now {
			g.hit(pSessionExpired)
			g.removeMember(now, m)
		}
	}
	if g.state == CompletingRebalance && g.syncDeadline <= now {
		// The leader never sent the assignment (or members never asked for it): drop
		// those that did not sync and start over.
		// Decide who is late before removing anyone: the first removal restarts the
		// rebalance, which answers (and forgets) everyone's parked sync.
		g.hit(pSyncTimeout)
		var late []*member
		for _, m := range g.sortedMembers() {
			if m.syncWaiter == nil {
				late = append(late, m)
			}
		}
		for _, m := range late {
			if g.members[m.id] == m {
				g.removeMember(now, m)
			}
		}
		if g.state == CompletingRebalance {
			g.prepareRebalance(now)
		}
	}
	g.tryCompleteJoin(now)
}

// NextDeadline is the earliest time at which Tick has something to do, and false when
// nothing in the group depends on time. Ticking at or after it always makes progress.
func (g *Group) NextDeadline() (core.Time, bool) {
	var at core.Time
	ok := false
	consider := func(t core.Time) {
		if !ok || t < at {
			at, ok = t, true
		}
	}
	for _, t := range g.pending {
		consider(t)
	}
	for _, m := range g.members {
		if !m.keptAlive() {
			consider(m.deadline)
		}
	}
	switch g.state {
	case PreparingRebalance:
		consider(g.rebalanceDeadline)
		if g.allJoined() {
			consider(g.delayUntil)
		}
	case CompletingRebalance:
		consider(g.syncDeadline)
	}
	return at, ok
}
