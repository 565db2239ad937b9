package sim

import "fmt"

// Sync stalls: a group member that stops between its JoinGroup answer and its SyncGroup:
// a leader whose assignor is slow (its poll loop stuck computing the plan) or a member
// in a long GC pause. Stalls are mostly longer than the group's rebalance timeout. A
// leader's keeps the whole group waiting in CompletingRebalance, so the coordinator
// gives up waiting for the SyncGroup and drops it (core/group, probe
// group/sync-timeout-drops-members); the members already waiting for their assignment
// learn REBALANCE_IN_PROGRESS and rejoin. On three of four of its stalls a leader keeps
// heartbeating its new generation, as the Java consumer's heartbeat thread does while a
// rebalance completes; without heartbeats (a GC pause, and every stall of a follower,
// whose group turns Stable without it) the session runs out first. When the stall ends the stuck callback commits what it
// processed of the member's previous assignment, as that generation and member id
// (refused: REBALANCE_IN_PROGRESS while the group still waits for assignments, else
// ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID), then the member sends its SyncGroup and
// handles the answer as any member does:
// UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION → start over without an id,
// REBALANCE_IN_PROGRESS → rejoin.
//
// MemberSpec.SyncStallChance is drawn after every older choice of Draw and is 0 on
// every member that does not draw it; at 0 a member draws nothing from its own stream
// for stalls, so a seed without stalls keeps its trace.

// drawSyncStalls draws, per member, whether it stalls before SyncGroup now and then.
func drawSyncStalls(r *Rand, c *Config) {
	for i := range c.Members {
		if r.Chance(0.5) {
			c.Members[i].SyncStallChance = Pick(r, 0.05, 0.15, 0.3)
		}
	}
}

// maybeStallSync decides, after a JoinGroup answer, whether this generation's SyncGroup
// waits: for 3/4 to 3/2 of the largest rebalance timeout of the group's members (the
// coordinator waits that long for every SyncGroup), with heartbeats on three of four
// stalls of a leader. Nothing is drawn when stalls are off; none start once the faults
// have stopped.
func (m *member) maybeStallSync() {
	m.syncStallUntil = 0
	if m.draining || !m.rnd.Chance(m.spec.SyncStallChance) {
		return
	}
	var rebalance int64
	for _, o := range m.grp.members {
		rebalance = max(rebalance, int64(o.spec.RebalanceMs))
	}
	m.w.stats.Faults["member-sync-stall"]++
	m.syncStallUntil = m.w.now + m.rnd.Between(rebalance*3/4, rebalance*3/2)*ms
	m.stallBeats = m.id == m.leader && m.rnd.Chance(0.75)
	m.nextHB = m.w.now + m.hbInterval()
	if m.stale == nil {
		m.stale = m.prev // nil if it owned nothing
	}
	if m.w.logging() {
		m.w.logf(m.name, "stalls before SyncGroup of generation %d until %s (heartbeats %v)",
			m.gen, fmtTime(m.syncStallUntil), m.stallBeats)
	}
}

// stalledSync is the pump of a member in its sync stall; it reports false once the
// stall is over (and it may sync).
func (m *member) stalledSync(now int64) bool {
	if m.state != mSync || m.syncStallUntil == 0 {
		return false
	}
	if now >= m.syncStallUntil {
		m.syncStallUntil = 0
		if sc := m.stale; sc != nil {
			// The stuck callback finishes and commits what it processed.
			m.stale = nil
			m.commit(sc.id, sc.gen, sc.part)
			return true
		}
		return false
	}
	if m.stallBeats && now >= m.nextHB {
		m.heartbeat() // the answer is only recorded: a member in mSync ignores errors
		return true
	}
	next := m.syncStallUntil
	if m.stallBeats {
		next = min(next, m.nextHB)
	}
	m.wakeIn(next - now)
	return true
}

// setSyncStall applies the --set name of sync stalls.
func (c *Config) setSyncStall(name, value string) (bool, error) {
	if name != "member.syncstall.chance" {
		return false, nil
	}
	p, err := chance(name, value)
	if err != nil {
		return true, err
	}
	if len(c.Members) == 0 {
		return true, fmt.Errorf("%s: no group members (set members=N first)", name)
	}
	for i := range c.Members {
		c.Members[i].SyncStallChance = p
	}
	return true, nil
}

func init() {
	SettingHelp = append(SettingHelp,
		"member.syncstall.chance=P      per generation joined: a member stalls before SyncGroup")
}
