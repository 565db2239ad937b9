package replica

// The leader's side of the in-sync replica set (issue 8): the high-water mark is the
// minimum of what the leader holds (durably, with log.flush.policy=always) and what
// every follower in the ISR has replicated. Followers report what they hold durably
// (docs/actors.md), so an offset below the high-water mark survives every ISR member
// losing power. With no followers, as on a single node, the high-water mark is the
// leader's own durable end (or log end), as before.

// maxByteMarks bounds the marks kept to turn a high-water mark into visible bytes;
// past it every other mark is dropped, and BytesVisible may lag (a lower bound) until
// the high-water mark reaches a kept mark.
const maxByteMarks = 4096

// byteMark says bytesAppended was bytes once the log ended at end.
type byteMark struct {
	end   int64
	bytes int64
}

// SetISR makes followers (ids, the leader itself excluded) the in-sync replica set.
// A follower new to it counts from what it last reported, and never below the current
// high-water mark: the controller adds only followers that caught up. It reports
// whether the high-water mark moved (a lagging follower left).
func (r *Replica) SetISR(followers []int32) bool {
	next := make(map[int32]int64, len(followers))
	for _, id := range followers {
		next[id] = max(r.replicated[id], r.hwm)
	}
	r.isr = next
	return r.advanceHighWatermark()
}

// FollowerReplicated records that follower id holds the log up to end (exclusive),
// durably, from its Fetch; an end past the leader's is capped. It reports whether the
// high-water mark moved.
//
// The latest report replaces the earlier ones, even a lower one, as Kafka's leader
// replaces a follower's log end offset at each fetch: a follower's log can shrink (its
// disk was lost and it restarted empty, it truncated a divergent tail, rot made it
// start over), and what it held before vouches for nothing now. Kept as a maximum, a
// follower back with an empty log looked caught up at its first fetch, rejoined the
// ISR and was elected with a fraction of the acknowledged records (seed 363).
func (r *Replica) FollowerReplicated(id int32, end int64) bool {
	end = min(end, r.log.EndOffset())
	if r.replicated == nil {
		r.replicated = map[int32]int64{}
	}
	if mutantOn("follower-end-kept-max") {
		end = max(r.replicated[id], end)
	}
	r.replicated[id] = end
	if _, ok := r.isr[id]; !ok {
		return false
	}
	r.isr[id] = r.replicated[id]
	return r.advanceHighWatermark()
}

// InSyncReplicas is the size of the in-sync replica set, the leader included.
func (r *Replica) InSyncReplicas() int { return 1 + len(r.isr) }

// advanceHighWatermark raises the leader's high-water mark to the minimum over the ISR
// of what each member holds; it never lowers it. A follower's comes from its leader
// (SetLeaderHighWatermark).
func (r *Replica) advanceHighWatermark() bool {
	if r.follower {
		return false
	}
	next := r.log.EndOffset()
	if r.cfg.FlushAlways && !mutantOn("hwm-on-append") {
		next = r.durable
	}
	for _, end := range r.isr {
		next = min(next, end)
	}
	if next <= r.hwm {
		return false
	}
	r.hwm = next
	r.visibleBytes = max(r.visibleBytes, r.bytesAt(next))
	return true
}

// markAppend records the bytes appended so far at the new log end.
func (r *Replica) markAppend() {
	if len(r.marks) >= maxByteMarks {
		kept := r.marks[:0]
		for i := 1; i < len(r.marks); i += 2 {
			kept = append(kept, r.marks[i])
		}
		r.marks = kept
	}
	r.marks = append(r.marks, byteMark{end: r.log.EndOffset(), bytes: r.bytesAppended})
}

// bytesAt returns bytesAppended as of the newest kept mark at or below end, and drops
// the marks before it (end is the new high-water mark: nothing asks below it again).
func (r *Replica) bytesAt(end int64) int64 {
	i := 0
	for i < len(r.marks) && r.marks[i].end <= end {
		i++
	}
	if i == 0 {
		return r.visibleBytes
	}
	b := r.marks[i-1].bytes
	r.marks = append(r.marks[:0], r.marks[i-1:]...)
	return b
}

// cutMarks forgets the marks past end (a truncation).
func (r *Replica) cutMarks(end int64) {
	n := len(r.marks)
	for n > 0 && r.marks[n-1].end > end {
		n--
	}
	r.marks = r.marks[:n]
}

// ByteMarks is how many byte marks the replica keeps (bounded by maxByteMarks).
func (r *Replica) ByteMarks() int { return len(r.marks) }
