package group

import "github.com/sluicemq/sluice/core/probe"

// Code probes of the group coordinator (package probe): the branches a simulator sweep
// should reach. docs/simulation.md lists those it never reaches, with the reason.
var (
	pJoinMemberIDRequired  = probe.Register("group/join-member-id-required")
	pJoinUnknownMember     = probe.Register("group/join-unknown-member")
	pJoinBadSession        = probe.Register("group/join-invalid-session-timeout")
	pJoinInconsistent      = probe.Register("group/join-inconsistent-protocol")
	pJoinMaxSize           = probe.Register("group/join-max-size")
	pJoinCurrentGeneration = probe.Register("group/join-answered-current-generation")
	pJoinStartsRebalance   = probe.Register("group/join-starts-rebalance")
	pJoinSuperseded        = probe.Register("group/join-superseded-by-retry")
	pRebalanceAbandonsSync = probe.Register("group/rebalance-abandons-sync")
	pRebalanceInitialDelay = probe.Register("group/rebalance-initial-delay")
	pRebalanceToEmpty      = probe.Register("group/rebalance-ends-empty")
	pRebalanceDropsLate    = probe.Register("group/rebalance-drops-unjoined")
	pSyncUnknownMember     = probe.Register("group/sync-unknown-member")
	pSyncIllegalGeneration = probe.Register("group/sync-illegal-generation")
	pSyncRebalancing       = probe.Register("group/sync-rebalance-in-progress")
	pSyncSuperseded        = probe.Register("group/sync-superseded-by-retry")
	pSyncStable            = probe.Register("group/sync-answered-stable")
	pSyncTimeout           = probe.Register("group/sync-timeout-drops-members")
	pHeartbeatUnknown      = probe.Register("group/heartbeat-unknown-member")
	pHeartbeatIllegalGen   = probe.Register("group/heartbeat-illegal-generation")
	pHeartbeatRebalancing  = probe.Register("group/heartbeat-rebalance-in-progress")
	pLeavePending          = probe.Register("group/leave-pending-member")
	pLeaveUnknown          = probe.Register("group/leave-unknown-member")
	pLeaveMember           = probe.Register("group/leave-member")
	pSessionExpired        = probe.Register("group/session-expired")
	pCommitSimple          = probe.Register("group/commit-simple-consumer")
	pCommitRebalancing     = probe.Register("group/commit-rebalance-in-progress")
	pCommitUnknownMember   = probe.Register("group/commit-unknown-member")
	pCommitIllegalGen      = probe.Register("group/commit-illegal-generation")
	pOffsetsExpireEmpty    = probe.Register("group/offsets-expire-empty-group")
	pOffsetsExpireUnsubbed = probe.Register("group/offsets-expire-unsubscribed")
)

func (g *Group) hit(id probe.ID) { g.cfg.Probes.Hit(id) }
