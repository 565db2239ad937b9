package replica

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The leader's view of its followers' fetches (issue 8): whether a follower's position
// is valid in this leader's log (its epoch, a diverging tail), when each follower was
// last caught up (for replica.lag.time.max.ms), and which followers may join or must
// leave the in-sync replica set. The replica only answers; ISR changes go through the
// controller, which calls SetISR once they commit.

// FollowerFetch is what one follower's Fetch tells its leader about one partition.
type FollowerFetch struct {
	Replica int32 // the follower's node id
	// FetchOffset is the follower's log end. A follower fetches again only once what it
	// appended is durable (with log.flush.policy=always), so it is also what the
	// follower holds durably: the offset the leader's high-water mark may count.
	FetchOffset int64
	// LastFetchedEpoch is the leader epoch of the follower's last batch; -1 when it is
	// not sent (Fetch before v12) or the follower's log is empty.
	LastFetchedEpoch int32
	// CurrentLeaderEpoch is the epoch the follower believes this leader has; -1: not
	// checked.
	CurrentLeaderEpoch int32
	// LogStartOffset is the follower's log start (Fetch v5+); -1: not sent.
	LogStartOffset int64
	NowMs          int64
}

// FollowerCheck is the leader's verdict on a follower's fetch, before it reads.
type FollowerCheck struct {
	// Code is a Kafka error code for the partition: NOT_LEADER_OR_FOLLOWER,
	// FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH or OFFSET_OUT_OF_RANGE; 0 when the
	// fetch may proceed.
	Code int16
	// Diverging says the follower's log has a tail this leader's log does not: it must
	// truncate to DivergingEndOffset (the end of DivergingEpoch here) before fetching
	// again, and the fetch returns no records (Fetch v12+ DivergingEpoch).
	Diverging          bool
	DivergingEpoch     int32
	DivergingEndOffset int64
}

// followerFetchState is what the leader remembers of one follower's fetches.
type followerFetchState struct {
	lastFetchMs        int64 // when it last fetched
	lastFetchLeaderEnd int64 // the leader's log end at that fetch
	caughtUpMs         int64 // the last time its log reached the leader's end
	logStart           int64 // its log start at its last fetch; -1: not known
}

// CheckFollowerFetch validates a follower's fetch position against this leader's log,
// as Kafka's leader does before reading for a follower.
func (r *Replica) CheckFollowerFetch(f FollowerFetch) FollowerCheck {
	switch {
	case r.follower:
		return FollowerCheck{Code: kerr.NotLeaderForPartition.Code}
	case f.CurrentLeaderEpoch >= 0 && f.CurrentLeaderEpoch < r.leaderEpoch:
		return FollowerCheck{Code: kerr.FencedLeaderEpoch.Code}
	case f.CurrentLeaderEpoch > r.leaderEpoch:
		return FollowerCheck{Code: kerr.UnknownLeaderEpoch.Code}
	}
	if f.LastFetchedEpoch >= 0 {
		epoch, end := r.EndOffsetForEpoch(f.LastFetchedEpoch)
		if epoch < 0 || end < 0 {
			// The follower has an epoch newer than any here: it cannot have come from
			// this leader's log.
			return FollowerCheck{Code: kerr.OffsetOutOfRange.Code}
		}
		if epoch < f.LastFetchedEpoch || end < f.FetchOffset {
			return FollowerCheck{Diverging: true, DivergingEpoch: epoch,
				DivergingEndOffset: end}
		}
	}
	if f.FetchOffset < r.log.StartOffset() || f.FetchOffset > r.log.EndOffset() {
		return FollowerCheck{Code: kerr.OffsetOutOfRange.Code}
	}
	return FollowerCheck{}
}

// FollowerFetched records a valid follower fetch (CheckFollowerFetch found nothing
// wrong): what the follower holds, which may move the high-water mark (reported), and
// when it was last caught up. A follower is caught up at this fetch if it reached the
// leader's current end, or at its previous fetch if it now reached the end the leader
// had then: a follower that keeps up with a busy leader is always one fetch behind.
func (r *Replica) FollowerFetched(f FollowerFetch) bool {
	if r.fetchState == nil {
		r.fetchState = map[int32]*followerFetchState{}
	}
	s := r.fetchState[f.Replica]
	if s == nil {
		s = &followerFetchState{}
		r.fetchState[f.Replica] = s
	}
	s.logStart = f.LogStartOffset
	end := r.log.EndOffset()
	switch {
	case f.FetchOffset >= end:
		s.caughtUpMs = max(s.caughtUpMs, f.NowMs)
	case f.FetchOffset >= s.lastFetchLeaderEnd:
		s.caughtUpMs = max(s.caughtUpMs, s.lastFetchMs)
	}
	s.lastFetchLeaderEnd, s.lastFetchMs = end, f.NowMs
	return r.FollowerReplicated(f.Replica, f.FetchOffset)
}

// LowWatermark is the smallest log start of this leader and its ISR followers, each
// as it reported it with its last fetch (Kafka's lowWatermarkIfLeader, over the ISR:
// the replicas a new leader comes from); -1 while an ISR follower has reported none.
// A DeleteRecords is acknowledged once it reached the requested offset: a new leader
// then serves nothing below it.
func (r *Replica) LowWatermark() int64 {
	low := r.log.StartOffset()
	for id := range r.isr {
		s := r.fetchState[id]
		if s == nil || s.logStart < 0 {
			return -1
		}
		low = min(low, s.logStart)
	}
	return low
}

// ResetFollowers starts the leader's tracking of its followers afresh, as a new leader
// does: members of the ISR count as caught up now (they get replica.lag.time.max.ms to
// fetch from it), the others as never.
func (r *Replica) ResetFollowers(followers []int32, nowMs int64) {
	r.fetchState = make(map[int32]*followerFetchState, len(followers))
	end := r.log.EndOffset()
	for _, id := range followers {
		s := &followerFetchState{lastFetchMs: nowMs, lastFetchLeaderEnd: end, logStart: -1}
		if _, in := r.isr[id]; in {
			s.caughtUpMs = nowMs
		}
		r.fetchState[id] = s
	}
}

// OutOfSyncReplicas lists the ISR followers not caught up within lagMaxMs
// (replica.lag.time.max.ms) at nowMs, by id: the leader asks the controller to drop
// them. A follower whose log already ends where the leader's does is never out of sync.
func (r *Replica) OutOfSyncReplicas(nowMs, lagMaxMs int64) []int32 {
	var out []int32
	end := r.log.EndOffset()
	for id, held := range r.isr {
		if held >= end {
			continue
		}
		s := r.fetchState[id]
		if s == nil || nowMs-s.caughtUpMs > lagMaxMs {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// CaughtUpReplicas lists the followers outside the ISR, among followers, that may
// join it: each holds the log up to the high-water mark and up to the start of the
// leader's current epoch (so it holds nothing an older leader wrote that this one
// truncated). By id.
func (r *Replica) CaughtUpReplicas(followers []int32) []int32 {
	epochStart := int64(0)
	if e, ok := r.epochs.latest(); ok {
		epochStart = e.StartOffset
	}
	var out []int32
	for _, id := range followers {
		if _, in := r.isr[id]; in {
			continue
		}
		held, ok := r.replicated[id]
		if ok && held >= r.hwm && held >= epochStart {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
