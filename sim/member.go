package sim

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/linearizability"
)

// member is one consumer of a consumer group speaking the classic protocol as Kafka
// clients do: FindCoordinator, JoinGroup (with the MEMBER_ID_REQUIRED round of v4+),
// the leader assigns the topic's partitions (range or round robin) and every member
// gets its part in SyncGroup, then Heartbeat every third of the session timeout. It
// rejoins on REBALANCE_IN_PROGRESS, starts over without a member id on
// UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION, commits offsets of the partitions it owns
// with its generation and member id, and fetches them when it gets an assignment.
//
// During the safety phase it now and then leaves (LeaveGroup), vanishes (a crashed
// consumer: its session must expire) or stalls (a long GC pause: it comes back as a
// zombie with its old generation). After a rebalance it may commit once more as the
// previous generation, as a consumer whose poll loop raced the rebalance does: the
// coordinator must refuse it. Every answer is recorded in the group history
// (linearizability/groups.go); commits and fetches are also committed-offset registers.
type member struct {
	clientBase
	spec MemberSpec
	num  int
	grp  *simGroup

	state    mState
	inFlight bool
	draining bool

	id         string // "" until the coordinator names it
	gen        int32
	leader     string
	protocol   string
	joinInc    uint64 // coordinator incarnation of the join answer
	peers      []kmsg.JoinGroupResponseMember
	plan       []kmsg.SyncGroupRequestGroupAssignment // the leader's, kept for retries
	planParts  int32
	owned      []int32
	parts      int32        // partitions of the topic, as last seen
	stale      *staleCommit // to send before anything else
	prev       *staleCommit // the last generation's identity, for a stale commit
	fetchOwned bool

	rejoinAt, nextHB, nextCommit, churnAt, stallUntil, metaAt int64
	syncedAt, hbOKSent                                        int64
	count                                                     int64
	syncStallUntil                                            int64 // member_stall.go
	stallBeats                                                bool  // heartbeats in it
}

type mState uint8

const (
	mOut    mState = iota // not in the group (before the first join, after leaving)
	mFind                 // FindCoordinator
	mMeta                 // learn the topic's partition count
	mJoin                 // JoinGroup
	mSync                 // SyncGroup
	mStable               // heartbeating
)

// staleCommit is a commit a member makes as its previous generation.
type staleCommit struct {
	id   string
	gen  int32
	part int32
}

// simGroup is what the world knows about one group's members, for the liveness check.
type simGroup struct {
	name    string
	members []*member
}

func newMember(w *World, actor int32, num int, spec MemberSpec) *member {
	m := &member{spec: spec, num: num, gen: -1}
	m.clientBase = newClientBase(w, actor, fmt.Sprintf("member%d", num), m.pump)
	gc := w.brokerCfg.Groups.Coordinator
	m.spec.SessionMs = min(max(spec.SessionMs, gc.MinSessionTimeoutMs), gc.MaxSessionTimeoutMs)
	m.spec.RebalanceMs = max(spec.RebalanceMs, m.spec.SessionMs) // see drawMembers
	if v := m.vers[int16(kmsg.OffsetCommit)]; v < 1 {
		m.vers[int16(kmsg.OffsetCommit)] = 1 // v0 commits carry no generation
	}
	if w.groups == nil {
		w.groups = map[string]*simGroup{}
	}
	g := w.groups[spec.Group]
	if g == nil {
		g = &simGroup{name: spec.Group}
		w.groups[spec.Group] = g
	}
	g.members = append(g.members, m)
	m.grp = g
	return m
}

func (m *member) start() {
	m.rejoinAt = m.rnd.Between(0, 300) * ms
	m.churnAt = m.nextChurn()
	m.wakeIn(m.rejoinAt)
}

func (m *member) heal() { m.draining, m.syncStallUntil = true, 0; m.wakeIn(0) }

func (m *member) nextChurn() int64 {
	if m.spec.ChurnMs == 0 {
		return 1 << 62
	}
	return m.w.now + m.rnd.Exp(100*ms, m.spec.ChurnMs*ms)
}

// busy reports, for the group's first member, that the group has not reached a
// generation every member holds an assignment of, confirmed by a heartbeat of each
// sent after the last of them got its assignment.
func (m *member) busy() string {
	if !m.draining || m.grp.members[0] != m {
		return ""
	}
	gen, last := int32(-1), int64(0)
	for _, o := range m.grp.members {
		if o.state != mStable || (gen >= 0 && o.gen != gen) {
			return fmt.Sprintf("group %s has not settled (%s)", m.grp.name, m.grp.describe())
		}
		gen, last = o.gen, max(last, o.syncedAt)
	}
	for _, o := range m.grp.members {
		if o.hbOKSent <= last {
			return fmt.Sprintf("group %s: not every member heartbeated in generation %d (%s)",
				m.grp.name, gen, m.grp.describe())
		}
	}
	return ""
}

func (g *simGroup) describe() string {
	s := ""
	for i, o := range g.members {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s state=%d gen=%d", o.name, o.state, o.gen)
	}
	return s
}

func (m *member) pump() {
	if m.backingOff() || m.inFlight {
		return
	}
	now := m.w.now
	if m.stallUntil > now {
		m.wakeIn(m.stallUntil - now)
		return
	}
	// A stale commit waits for the new assignment: then the group is Stable again and
	// only the generation check can refuse it.
	if sc := m.stale; sc != nil && m.state == mStable {
		m.stale = nil
		m.commit(sc.id, sc.gen, sc.part)
		return
	}
	if m.stalledSync(now) {
		return
	}
	switch m.state {
	case mOut:
		if now < m.rejoinAt {
			m.wakeIn(m.rejoinAt - now)
			return
		}
		m.state = mFind
		m.findCoordinator()
	case mFind:
		m.findCoordinator()
	case mMeta:
		m.metadata()
	case mJoin:
		m.join()
	case mSync:
		m.sync()
	case mStable:
		m.stable(now)
	}
}

// stable does the next thing a member with an assignment does.
func (m *member) stable(now int64) {
	commits := m.spec.CommitMs > 0 && len(m.owned) > 0
	leader := m.id == m.leader
	switch {
	case !m.draining && now >= m.churnAt:
		m.churn()
	case m.fetchOwned:
		m.fetchOwned = false
		m.fetchCommitted()
	case now >= m.nextHB:
		m.heartbeat()
	case leader && now >= m.metaAt:
		m.metadata() // the leader watches for new partitions, staying Stable
	case commits && now >= m.nextCommit:
		m.nextCommit = now + m.rnd.Exp(ms, m.spec.CommitMs*ms)
		m.commit(m.id, m.gen, m.owned[m.rnd.Intn(len(m.owned))])
	default:
		next := m.nextHB
		if !m.draining {
			next = min(next, m.churnAt)
		}
		if leader {
			next = min(next, m.metaAt)
		}
		if commits {
			next = min(next, m.nextCommit)
		}
		m.wakeIn(next - now)
	}
}

// churn: leave, vanish or stall.
func (m *member) churn() {
	m.churnAt = m.nextChurn()
	down := m.rnd.Between(50, 1500) * ms
	switch m.rnd.Intn(3) {
	case 0:
		m.leave(down)
	case 1:
		m.w.stats.Faults["member-vanish"]++
		if m.c != nil {
			m.dropConn(m.c)
		}
		m.reset()
		m.state, m.rejoinAt = mOut, m.w.now+down
		m.wakeIn(down)
	default:
		m.w.stats.Faults["member-stall"]++
		m.stallUntil = m.w.now + m.rnd.Between(int64(m.spec.SessionMs)/2,
			int64(m.spec.SessionMs)*2)*ms
		m.wakeIn(m.stallUntil - m.w.now)
	}
}

// reset forgets the membership: the next join is a new member's.
func (m *member) reset() {
	m.remember()
	m.id, m.gen, m.leader, m.owned, m.peers, m.plan = "", -1, "", nil, nil, nil
}

// retry tries the current step again after the backoff.
func (m *member) retry() {
	m.inFlight = false
	m.wakeIn(m.spec.BackoffMs * ms)
}

// rejoin goes back to JoinGroup (keeping the member id) after the backoff.
func (m *member) rejoin() {
	m.remember()
	m.owned = nil
	m.state = mJoin
	m.retry()
}

// coordinatorLost handles the errors after which a client looks for its coordinator
// again; it reports whether code was one of them.
func (m *member) coordinatorLost(code int16) bool {
	switch code {
	case kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code,
		kerr.CoordinatorLoadInProgress.Code:
		m.state = mFind
		m.retry()
		return true
	}
	return false
}

// sendTracked sends req and gives done the incarnation of the coordinator that answered:
// the node's process, or in a cluster its coordinator term.
func (m *member) sendTracked(req kmsg.Request, timeoutMs int64,
	done func(r kmsg.Response, inc uint64, err error)) {
	var cn *conn
	m.inFlight = true
	m.send(req, timeoutMs, func(r kmsg.Response, err error) {
		m.inFlight = false
		if m.rt != nil {
			done(r, m.lastTerm, err) // a cluster's coordinator term (coord_term.go)
			return
		}
		done(r, cn.gen, err)
	})
	cn = m.c
}

func (m *member) findCoordinator() {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(m.vers[req.Key()])
	if req.Version >= 4 {
		req.CoordinatorKeys = []string{m.spec.Group}
	} else {
		req.CoordinatorKey = m.spec.Group
	}
	m.sendTracked(req, m.spec.TimeoutMs, func(r kmsg.Response, _ uint64, err error) {
		if err != nil {
			m.retry()
			return
		}
		resp := r.(*kmsg.FindCoordinatorResponse)
		code := resp.ErrorCode
		if resp.Version >= 4 && len(resp.Coordinators) == 1 {
			code = resp.Coordinators[0].ErrorCode
		}
		m.code("find-coordinator", code)
		if code != 0 {
			m.retry()
			return
		}
		m.state = mMeta
		m.wakeIn(0)
	})
}

// metadata learns the topic's partition count before joining; a Stable leader asks
// now and then, and rejoins when it grew so the new partitions get assigned.
func (m *member) metadata() {
	m.inFlight = true
	m.requestMetadata([]string{m.spec.Topic}, m.spec.TimeoutMs,
		func(c map[string]int32, err error) {
			m.inFlight = false
			m.metaAt = m.w.now + 2000*ms
			if err != nil || c[m.spec.Topic] == 0 {
				m.retry()
				return
			}
			m.parts = c[m.spec.Topic]
			switch {
			case m.state == mMeta:
				m.state = mJoin
			case m.state == mStable && m.parts != m.planParts:
				m.rejoin() // a leader's refresh: new partitions need a new plan
				return
			}
			m.wakeIn(0)
		})
}

func (m *member) protocols() []kmsg.JoinGroupRequestProtocol {
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{m.spec.Topic}
	raw := md.AppendTo(nil)
	var out []kmsg.JoinGroupRequestProtocol
	for _, name := range m.spec.Protocols {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = name, raw
		out = append(out, p)
	}
	return out
}

func (m *member) join() {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = m.spec.Group, m.id, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = m.spec.SessionMs, m.spec.RebalanceMs
	req.Protocols = m.protocols()
	call := m.w.now
	// The answer waits for the rebalance: the initial delay plus the rebalance timeout.
	timeout := int64(m.spec.RebalanceMs) + 3000 + m.spec.TimeoutMs
	m.sendTracked(req, timeout, func(r kmsg.Response, inc uint64, err error) {
		if err != nil {
			m.retry()
			return
		}
		m.joined(call, inc, r.(*kmsg.JoinGroupResponse))
	})
}

func (m *member) joined(call int64, inc uint64, resp *kmsg.JoinGroupResponse) {
	m.code("join-group", resp.ErrorCode)
	switch code := resp.ErrorCode; {
	case code == 0:
	case code == kerr.MemberIDRequired.Code:
		m.id = resp.MemberID
		m.wakeIn(0)
		return
	case code == kerr.UnknownMemberID.Code:
		m.reset()
		m.retry()
		return
	case code == kerr.RebalanceInProgress.Code:
		m.retry()
		return
	case m.coordinatorLost(code):
		return
	default:
		m.w.fail("unexpected-error", "%s: JoinGroup of %s answered %s", m.name, m.spec.Group,
			errName(code))
		m.retry()
		return
	}
	m.id, m.gen, m.leader, m.joinInc = resp.MemberID, resp.Generation, resp.LeaderID, inc
	m.protocol = ""
	if resp.Protocol != nil {
		m.protocol = *resp.Protocol
	}
	m.w.recordGroup(linearizability.GroupEvent{Kind: linearizability.GroupJoined,
		Group: m.spec.Group, Client: int(m.actor), Incarnation: inc, Member: m.id,
		Generation: m.gen, Leader: m.leader, Protocol: m.protocol, Call: call,
		Return: m.w.now})
	if m.prev != nil && m.rnd.Chance(m.spec.StaleChance) {
		m.stale = m.prev
	}
	m.maybeStallSync() // before prev is forgotten: a stalled callback commits as it
	m.prev = nil
	m.plan = nil
	if m.id == m.leader {
		m.peers = resp.Members
		m.plan = m.assign()
	}
	m.state = mSync
	m.wakeIn(0)
}

// assign is the leader's plan: the topic's partitions over the members, by range
// (contiguous runs) or round robin, members sorted by id as Kafka's assignors do.
func (m *member) assign() []kmsg.SyncGroupRequestGroupAssignment {
	ids := make([]string, 0, len(m.peers))
	for _, p := range m.peers {
		ids = append(ids, p.MemberID)
	}
	sort.Strings(ids)
	owned := map[string][]int32{}
	n := int32(len(ids))
	m.planParts = m.parts
	for p := int32(0); p < m.parts && n > 0; p++ {
		i := p % n
		if m.protocol == "range" {
			per, extra := m.parts/n, m.parts%n
			// The first `extra` members take per+1 partitions, the rest per.
			if p < extra*(per+1) {
				i = p / (per + 1)
			} else {
				i = extra + (p-extra*(per+1))/max(per, 1)
			}
		}
		owned[ids[i]] = append(owned[ids[i]], p)
	}
	plan := linearizability.EncodePlan(m.gen, m.id, ids, owned)
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(ids))
	for _, id := range ids {
		a := kmsg.NewConsumerMemberAssignment()
		if len(owned[id]) > 0 {
			t := kmsg.NewConsumerMemberAssignmentTopic()
			t.Topic, t.Partitions = m.spec.Topic, owned[id]
			a.Topics = append(a.Topics, t)
		}
		a.UserData = []byte(plan)
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a.AppendTo(nil)
		out = append(out, ga)
	}
	return out
}

// remember keeps the current generation's identity and one owned partition: after the
// next rebalance the member may commit as it (a zombie commit the coordinator must
// refuse).
func (m *member) remember() {
	if len(m.owned) > 0 && m.id != "" {
		m.prev = &staleCommit{id: m.id, gen: m.gen, part: m.owned[m.rnd.Intn(len(m.owned))]}
	}
}
