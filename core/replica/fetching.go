package replica

import "github.com/twmb/franz-go/pkg/kerr"

// The follower's side of a fetch from its leader (issue 8): where to fetch from, and
// how far to truncate when the leader says the follower's log diverges from its own.

// FetchPosition says where a follower fetches from next: its log end, and the latest
// epoch of its leader-epoch cache (-1 when empty), which the leader checks its log
// against (Fetch v12+ LastFetchedEpoch). ok is false while it must not fetch: it leads
// or is offline, or, with log.flush.policy=always, what it appended is not durable yet:
// the leader counts a follower's fetch offset as held durably (lag.go), so a follower
// fetches again only after its fsync.
func (r *Replica) FetchPosition() (offset int64, lastEpoch int32, ok bool) {
	if !r.follower || r.offline {
		return 0, 0, false
	}
	end := r.log.EndOffset()
	if r.cfg.FlushAlways && (r.syncInFlight || r.durable < end) {
		return 0, 0, false
	}
	lastEpoch = -1
	if e, found := r.epochs.latest(); found {
		lastEpoch = e.Epoch
	}
	return end, lastEpoch, true
}

// TruncationFor is where the follower cuts its log when the leader answered a fetch
// with a diverging epoch (leaderEpoch ends at leaderEnd in the leader's log), as
// Kafka's follower computes it: at the smaller of leaderEnd and where the follower's
// own log ends that epoch. complete is false when the follower does not have that
// epoch itself (it ends an older one there): its next fetch, with the epoch it is
// left with, lets the leader check again, and the cuts converge on the point where
// both logs agree.
func (r *Replica) TruncationFor(leaderEpoch int32, leaderEnd int64) (offset int64,
	complete bool) {
	end := r.log.EndOffset()
	epoch, ownEnd := r.EndOffsetForEpoch(leaderEpoch)
	if epoch < 0 {
		return min(leaderEnd, end), false
	}
	return min(leaderEnd, ownEnd, end), epoch == leaderEpoch
}

// ReadForFollower is Read for a follower's fetch (after CheckFollowerFetch): batches
// from offset up to the leader's log end, durable or not, as Kafka's leader serves its
// followers. The high-water mark only counts what the followers then hold durably, so
// nothing unacknowledged becomes visible by being replicated.
func (r *Replica) ReadForFollower(offset int64, maxBytes int) ReadResult {
	res := ReadResult{HighWatermark: r.hwm, StartOffset: r.log.StartOffset()}
	end := r.log.EndOffset()
	switch {
	case r.offline:
		res.Err = kerr.KafkaStorageError.Code
		return res
	case offset < res.StartOffset || offset > end:
		res.Err = kerr.OffsetOutOfRange.Code
		return res
	case offset == end || maxBytes <= 0:
		return res
	}
	if b, ok := r.readFresh(offset); ok {
		res.Records = b
		return res
	}
	return r.readUpTo(res, offset, maxBytes, end)
}
