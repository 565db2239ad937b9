package broker

// The follower fetcher: the follower side of replication (issue 8).
//
// For every partition this node follows, the replica manager keeps a followedPartition
// and groups them by leader node in a leaderLink, Kafka's ReplicaFetcherThread for one
// source broker (Kafka's num.replica.fetchers=1). A link has at most one inter-broker
// request in flight (Env.SendPeer, rule E7), for all its partitions at once:
//
//   - OffsetForLeaderEpoch for the partitions in phaseTruncating (ReplicaID = this
//     node, the latest epoch of the follower's log): each answer gives where that epoch
//     ends in the leader's log, the follower cuts its divergent tail there (TruncateTo;
//     KIP-101/KIP-279), and fetches once the cut is complete;
//   - ListOffsets (latest) for the partitions in phaseOutOfRange: the leader said
//     OFFSET_OUT_OF_RANGE, and a follower ahead of its leader's end cuts back to it;
//   - otherwise Fetch for the partitions in phaseFetching, from each one's log end with
//     its latest epoch (FetchPosition), in the link's incremental fetch session
//     (KIP-227, fetcher_session.go): after the first full Fetch only the partitions
//     whose position changed, were added or came back are listed.
//
// Ordering rules (docs/replication.md, "Follower fetcher"):
//   - F1: truncate before fetching from a new leader or epoch: follow puts a partition
//     with any epoch in its log in phaseTruncating, and a Fetch answer with a diverging
//     epoch (v12+) cuts the tail before the next Fetch.
//   - F2: with log.flush.policy=always a partition is fetched again only once what it
//     appended is fsynced (replica.FetchPosition), and the link waits for those syncs
//     before its next Fetch: the leader counts the next fetch offset as held durably.
//   - F3: no truncation while a sync of the partition is in flight (replica R3): the
//     partition waits for its SyncDone.
//   - F4: a reply is applied only to the partitions it was sent for, in the same
//     incarnation of their following (followedPartition identity and epoch); anything
//     else in it is stale and ignored.
//
// Everything is bounded: one request per leader node, one entry per followed partition,
// one backoff timer per link. A Fetch carries every partition ready on its link, capped
// by replica.fetch.max.bytes per partition and replica.fetch.response.max.bytes in all.

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/replica"
)

// fetchPhase is where one followed partition stands. The set is closed.
type fetchPhase uint8

const (
	phaseTruncating fetchPhase = iota + 1 // ask OffsetForLeaderEpoch, cut, then fetch
	phaseFetching                         // Fetch from the log end
	phaseOutOfRange                       // ask the leader's end (ListOffsets), cut to it
	phaseFailed                           // the replica went offline: nothing until follow
)

func (p fetchPhase) String() string {
	switch p {
	case phaseTruncating:
		return "truncating"
	case phaseFetching:
		return "fetching"
	case phaseOutOfRange:
		return "out-of-range"
	case phaseFailed:
		return "failed"
	default:
		return "phase(?)"
	}
}

// followedPartition is one partition this node follows. A new one is made whenever the
// leader or its epoch changes, so a reply to a request sent for the old one is told
// apart by identity (F4).
type followedPartition struct {
	tp          core.TopicPartition
	leader      int32
	epoch       int32 // the leader's epoch, sent as CurrentLeaderEpoch
	phase       fetchPhase
	retryAt     core.Time // backoff: not asked for before this
	leaderHWM   int64     // the high-water mark the leader last reported
	leaderStart int64     // the log start offset the leader last reported
	failures    int       // consecutive errors, for the logs
}

// leaderLink is the fetcher for one leader node: its partitions and the one request in
// flight to it.
type leaderLink struct {
	leader  int32
	parts   map[core.TopicPartition]*followedPartition
	req     *fetcherRequest // nil when idle
	timer   uint64          // the backoff timer, 0 when none
	timerAt core.Time
	// syncing holds the partitions whose last fetch appended data not yet fsynced: the
	// next Fetch waits until it is empty (F2), so a round costs one scan, not one per
	// SyncDone.
	syncing map[core.TopicPartition]bool
	session linkSession // the fetch session with this leader (fetcher_session.go)
	// transportFailures counts the requests in a row that got no answer (transport
	// errors); an answer resets it (transportFailed).
	transportFailures int
}

// requestKind is what a fetcher request asks. The set is closed.
type requestKind uint8

const (
	reqEpochs     requestKind = iota + 1 // OffsetForLeaderEpoch
	reqLeaderEnds                        // ListOffsets, latest
	reqFetch                             // Fetch
)

// fetcherRequest is the request in flight on a link: its peer id and the partitions
// it was sent for.
type fetcherRequest struct {
	id    uint64
	kind  requestKind
	parts map[core.TopicPartition]*followedPartition
	since core.Time
	// sessionEpoch is a Fetch's SessionEpoch (0: full, asking for a session).
	sessionEpoch int32
}

// fetcherState is the replica manager's follower side.
type fetcherState struct {
	links map[int32]*leaderLink
	byTP  map[core.TopicPartition]*followedPartition
	byReq map[uint64]*leaderLink // the request in flight, by peer request id
}

// follow starts following tp from leader at leaderEpoch, or retargets the partition
// when the leader or the epoch changed (a repeated call changes nothing). A leader of
// -1 (none) or this node stops following instead. The replica
// is made a follower (BecomeFollower) if it is open; one still opening is made so when
// its log opens (fetcherLogOpened). It first truncates (F1), then fetches.
func (rm *replicaManager) follow(tp core.TopicPartition, leader, leaderEpoch int32) {
	f := &rm.fetcher
	if leader < 0 || leader == rm.cfg.NodeID {
		// No leader (-1: none elected yet) or this node: nothing to fetch from.
		rm.lg.Warn("not following: no other leader", zap.Stringer("tp", tp),
			zap.Int32("leader", leader))
		rm.unfollow(tp)
		return
	}
	if old := f.byTP[tp]; old != nil {
		if old.leader == leader && old.epoch == leaderEpoch {
			return
		}
		rm.unfollow(tp)
	}
	if f.links == nil {
		f.links = map[int32]*leaderLink{}
		f.byTP = map[core.TopicPartition]*followedPartition{}
		f.byReq = map[uint64]*leaderLink{}
	}
	fp := &followedPartition{tp: tp, leader: leader, epoch: leaderEpoch,
		phase: phaseTruncating, leaderHWM: -1, leaderStart: -1}
	f.byTP[tp] = fp
	link := f.links[leader]
	if link == nil {
		link = &leaderLink{leader: leader, parts: map[core.TopicPartition]*followedPartition{},
			syncing: map[core.TopicPartition]bool{}}
		f.links[leader] = link
	}
	link.parts[tp] = fp
	rm.hit(pFollowStarted)
	rm.lg.Info("following partition", zap.Stringer("tp", tp), zap.Int32("leader", leader),
		zap.Int32("leader_epoch", leaderEpoch))
	if rep := rm.replicas[tp]; rep != nil {
		rm.stepDown(tp, rep, leaderEpoch)
	}
	rm.pumpLink(link)
}

// stepDown makes rep a follower. What waited for its high-water mark as a leader (acks=all
// produces, offset writes) is answered NOT_LEADER_OR_FOLLOWER first, as Kafka does: the
// tail it waited on may be cut by the truncation, and the high-water mark the follower
// takes from its new leader would otherwise "acknowledge" other records at its offsets.
func (rm *replicaManager) stepDown(tp core.TopicPartition, rep *replica.Replica, epoch int32) {
	if !rep.Follower() {
		rm.partitionFailed(tp, kerr.NotLeaderForPartition.Code)
	}
	rep.BecomeFollower(epoch)
}

// unfollow stops following tp (the partition was deleted, this node leads it now or
// left its replicas). A request in flight for it is answered into nothing (F4).
func (rm *replicaManager) unfollow(tp core.TopicPartition) {
	f := &rm.fetcher
	fp := f.byTP[tp]
	if fp == nil {
		return
	}
	delete(f.byTP, tp)
	link := f.links[fp.leader]
	delete(link.parts, tp)
	delete(link.syncing, tp)
	rm.lg.Info("stopped following partition", zap.Stringer("tp", tp),
		zap.Int32("leader", fp.leader))
	rm.maybeDropLink(link)
	if rm.fetcher.links[fp.leader] == link {
		// The link may have waited for this partition's sync (F2): nothing else
		// would wake it.
		rm.pumpLink(link)
	}
}

// maybeDropLink forgets a link with no partitions and no request in flight.
func (rm *replicaManager) maybeDropLink(link *leaderLink) {
	if len(link.parts) > 0 || link.req != nil {
		return
	}
	if link.timer != 0 {
		rm.cancelTimer(link.timer)
	}
	delete(rm.fetcher.links, link.leader)
}

// following reports the leader and phase of a followed partition (tests, Pending).
func (rm *replicaManager) following(tp core.TopicPartition) (leader int32, phase fetchPhase,
	ok bool) {
	fp := rm.fetcher.byTP[tp]
	if fp == nil {
		return -1, 0, false
	}
	return fp.leader, fp.phase, true
}

// fetcherLogOpened makes a followed partition whose log just opened a follower and
// wakes its link.
func (rm *replicaManager) fetcherLogOpened(tp core.TopicPartition) {
	fp := rm.fetcher.byTP[tp]
	if fp == nil {
		return
	}
	if rep := rm.replicas[tp]; rep != nil {
		rm.stepDown(tp, rep, fp.epoch)
	}
	rm.pumpLink(rm.fetcher.links[fp.leader])
}

// followerSynced runs after a followed partition's sync completed: the high-water mark
// the leader reported may now be covered by what this node holds durably, and the link
// may send its next request (F2, F3).
func (rm *replicaManager) followerSynced(tp core.TopicPartition) {
	fp := rm.fetcher.byTP[tp]
	if fp == nil {
		return
	}
	rep := rm.replicas[tp]
	if rep != nil && fp.leaderHWM >= 0 && rep.SetLeaderHighWatermark(fp.leaderHWM) {
		rm.hwmAdvanced(tp)
	}
	link := rm.fetcher.links[fp.leader]
	if link.syncing[tp] {
		if _, _, ok := rep.FetchPosition(); !ok && !rep.Offline() {
			return // more was appended meanwhile: its sync follows
		}
		delete(link.syncing, tp)
		if len(link.syncing) > 0 {
			return // the Fetch waits for the others too
		}
	}
	rm.pumpLink(link)
}

// readiness is what a partition of a link can do now.
type readiness uint8

const (
	notReady readiness = iota // backing off, failed, or its log is not open
	mustWait                  // a sync of it is in flight (F2, F3): the link waits
	readyNow                  // it can go into the next request of its phase
)

func (rm *replicaManager) readiness(fp *followedPartition) readiness {
	rep := rm.replicas[fp.tp]
	if rep == nil || fp.phase == phaseFailed {
		return notReady
	}
	if rep.Offline() {
		rm.partitionOffline(fp)
		return notReady
	}
	if !rep.Follower() {
		return notReady // it leads (BecomeLeader without unfollow): nothing to fetch
	}
	if fp.retryAt > rm.now {
		return notReady
	}
	if _, syncing := rm.syncs[fp.tp]; syncing {
		return mustWait
	}
	if fp.phase == phaseFetching {
		if _, _, ok := rep.FetchPosition(); !ok {
			if rep.NeedsSync() {
				// Appended unsynced under log.flush.policy=never, which is now always.
				rm.beginSync(fp.tp, rep)
			}
			return mustWait // appended data waits for its sync (F2)
		}
	}
	return readyNow
}

// partitionOffline stops fetching a partition whose log went offline (until restart).
func (rm *replicaManager) partitionOffline(fp *followedPartition) {
	if fp.phase == phaseFailed {
		return
	}
	fp.phase = phaseFailed
	if link := rm.fetcher.links[fp.leader]; link != nil {
		delete(link.syncing, fp.tp)
	}
	rm.hit(pFollowerOffline)
	rm.lg.Error("follower partition offline: not fetching it",
		zap.Stringer("tp", fp.tp), zap.Int32("leader", fp.leader))
}

// pumpLink sends the link's next request if it is idle and something is ready:
// truncation first (F1), then out-of-range checks, then a Fetch, which waits while a
// partition of the link syncs (F2). Otherwise it arms the link's backoff timer for the
// first partition that will be ready.
func (rm *replicaManager) pumpLink(link *leaderLink) {
	if link == nil || link.req != nil {
		return
	}
	ready := map[fetchPhase][]*followedPartition{}
	waiting := false
	var wake core.Time
	for _, tp := range sortedFollowed(link.parts) {
		fp := link.parts[tp]
		switch rm.readiness(fp) {
		case readyNow:
			ready[fp.phase] = append(ready[fp.phase], fp)
		case mustWait:
			waiting = true
		case notReady:
			if fp.phase != phaseFailed && fp.retryAt > rm.now && (wake == 0 ||
				fp.retryAt < wake) {
				wake = fp.retryAt
			}
		}
	}
	switch {
	case len(ready[phaseTruncating]) > 0:
		rm.sendEpochs(link, ready[phaseTruncating])
	case len(ready[phaseOutOfRange]) > 0:
		rm.sendLeaderEnds(link, ready[phaseOutOfRange])
	case len(ready[phaseFetching]) > 0 && !waiting && len(link.syncing) == 0:
		rm.sendFetch(link, ready[phaseFetching])
	case wake != 0:
		rm.armLinkTimer(link, wake)
	}
}

// armLinkTimer wakes the link at at, unless its timer already does so earlier.
func (rm *replicaManager) armLinkTimer(link *leaderLink, at core.Time) {
	if link.timer != 0 && link.timerAt <= at {
		return
	}
	if link.timer != 0 {
		rm.cancelTimer(link.timer)
	}
	link.timer = rm.setTimer(at, brokerTimer{kind: timerFetcherBackoff, leader: link.leader})
	link.timerAt = at
}

// fetcherTimerFired wakes a link after a backoff.
func (rm *replicaManager) fetcherTimerFired(leader int32) {
	link := rm.fetcher.links[leader]
	if link == nil {
		return
	}
	link.timer = 0
	rm.pumpLink(link)
}

// backOff keeps fp from being asked for during replica.fetch.backoff.ms.
func (rm *replicaManager) backOff(fp *followedPartition) {
	rm.backOffFor(fp, rm.cfg.Fetcher.BackoffMs)
}

// backOffFor holds fp back for ms.
func (rm *replicaManager) backOffFor(fp *followedPartition, ms int) {
	fp.failures++
	fp.retryAt = rm.now.AddMillis(int64(ms))
}

// startRequest records the request in flight on link and sends it.
func (rm *replicaManager) startRequest(link *leaderLink, kind requestKind,
	parts []*followedPartition, msg kmsg.Request) {
	id := rm.token()
	core.Invariant(id < fetcherIDLimit, "B14", "peer request id %d reaches the driver's bits",
		id)
	req := &fetcherRequest{id: id, kind: kind, since: rm.now,
		parts: make(map[core.TopicPartition]*followedPartition, len(parts))}
	for _, fp := range parts {
		req.parts[fp.tp] = fp
	}
	link.req = req
	rm.fetcher.byReq[id] = link
	rm.env.SendPeer(PeerRequest{Node: link.leader, ID: id, Msg: msg,
		TimeoutMs: rm.cfg.Fetcher.timeoutMs()})
}

// fetcherIDLimit: the node's tokens stay below the bits core/nodehost adds to the
// ids of the controller and lifecycle actors sharing the driver (1<<61, 1<<62), so a
// PeerReply for the fetcher is never taken for theirs.
const fetcherIDLimit = 1 << 60

// fetcherReply takes a PeerReply if it answers a fetcher request.
func (rm *replicaManager) fetcherReply(in PeerReply) bool {
	link := rm.fetcher.byReq[in.ID]
	if link == nil {
		return false
	}
	delete(rm.fetcher.byReq, in.ID)
	req := link.req
	link.req = nil
	if in.Err != nil || in.Msg == nil {
		rm.transportFailed(link, req, in)
	} else {
		link.transportFailures = 0
		rm.handleFetcherAnswer(link, req, in)
	}
	if rm.fetcher.links[link.leader] == link {
		rm.maybeDropLink(link)
		rm.pumpLink(rm.fetcher.links[link.leader])
	}
	return true
}

// transportFailed backs off every partition the request was for (its outcome is
// unknown: it may have reached the leader, which is harmless for these reads).
//
// The first failure in a row waits only reconnectBackoffMs: it is most often a pooled
// connection to a node that restarted since its last use (the write goes through, the
// read finds EOF), and the next request dials afresh. Waiting replica.fetch.backoff.ms
// (1 s) there cost every failover whose new leader had restarted before a second of
// acks=all (docs/benchmarks.md, 2026-12-04: rounds of 2.01 s against 1.1–1.5 s).
// Kafka's network client sees a closed connection at once and reconnects after
// reconnect.backoff.ms (50 ms). Failures after that wait the full backoff, so a dead
// leader is not hammered.
func (rm *replicaManager) transportFailed(link *leaderLink, req *fetcherRequest, in PeerReply) {
	rm.hit(pFetcherTransportError)
	if req.kind == reqFetch {
		link.session.reset(true) // it may or may not have reached the leader's session
	}
	link.transportFailures++
	wait := rm.cfg.Fetcher.BackoffMs
	if link.transportFailures == 1 && !mutantOn("fetcher-stale-conn-full-backoff") {
		wait = min(reconnectBackoffMs, wait)
	}
	rm.lg.Warn("request to leader failed; backing off", zap.Int32("leader", link.leader),
		zap.Int("partitions", len(req.parts)), zap.Int("backoff_ms", wait),
		zap.Int("failures_in_a_row", link.transportFailures), zap.Error(in.Err))
	for tp, fp := range req.parts {
		if rm.current(tp, fp) {
			rm.backOffFor(fp, wait)
		}
	}
}

// reconnectBackoffMs is the wait after a first transport failure to a leader (Kafka's
// reconnect.backoff.ms default).
const reconnectBackoffMs = 50

// current reports whether fp is still how tp is followed (F4).
func (rm *replicaManager) current(tp core.TopicPartition, fp *followedPartition) bool {
	return rm.fetcher.byTP[tp] == fp
}

func sortedFollowed(m map[core.TopicPartition]*followedPartition) []core.TopicPartition {
	out := make([]core.TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// fetcherPending lists each leader link's request in flight or backoff (Pending).
func (rm *replicaManager) fetcherPending(out []PendingOp) []PendingOp {
	leaders := make([]int32, 0, len(rm.fetcher.links))
	for id := range rm.fetcher.links {
		leaders = append(leaders, id)
	}
	sort.Slice(leaders, func(i, j int) bool { return leaders[i] < leaders[j] })
	for _, id := range leaders {
		link := rm.fetcher.links[id]
		what := fmt.Sprintf("leader %d (%d partitions)", id, len(link.parts))
		switch {
		case link.req != nil:
			out = append(out, PendingOp{Kind: PendingFollower, What: what,
				Waits: fmt.Sprintf("PeerReply id=%d (%s, %d partitions)", link.req.id,
					link.req.kind, len(link.req.parts)), Since: link.req.since})
		case link.timer != 0:
			out = append(out, PendingOp{Kind: PendingFollower, What: what,
				Waits: rm.describeTimer(rm.timers[link.timer], link.timer),
				Since: rm.timers[link.timer].set})
		}
	}
	return out
}

func (k requestKind) String() string {
	switch k {
	case reqEpochs:
		return "OffsetForLeaderEpoch"
	case reqLeaderEnds:
		return "ListOffsets"
	case reqFetch:
		return "Fetch"
	default:
		return "request(?)"
	}
}
