package replica

// A leader answers its followers' parked fetches in the step that appended what they
// wait for (the broker's requestSyncs). Reading the batch back from the log then costs
// a pread into a fresh, zeroed buffer of what the step holds in memory already: on a
// 3-node acks=all run it was a fifth of a partition leader's CPU (docs/benchmarks.md,
// "A follower's fetch served from the append"). So the leader keeps the last batch it
// appended, as written, until the broker has woken the followers (ForgetFresh), and
// ReadForFollower serves a read that starts at that batch and ends at the log end from
// it. Anything else reads the log.

// freshAppend is the last batch this leader appended: its bytes as written to the log,
// and the offsets they hold.
type freshAppend struct {
	b          []byte // nil when none
	base, next int64
}

// noteFresh keeps b, appended at [base, next), for ReadForFollower.
func (r *Replica) noteFresh(b []byte, base, next int64) {
	r.fresh = freshAppend{b: b, base: base, next: next}
}

// ForgetFresh drops the batch kept for ReadForFollower. The broker calls it once the
// followers waiting for the step's appends were answered, so a replica holds no
// request's bytes past the step.
func (r *Replica) ForgetFresh() {
	if !mutantOn("fresh-survives-step") {
		r.fresh = freshAppend{}
	}
}

// readFresh serves a read of offset up to the log end from the fresh batch: only when
// the batch begins there and nothing was written after it, so the answer is exactly
// what a read of the log returns (its first batch, whatever maxBytes says, and no more).
func (r *Replica) readFresh(offset int64) ([]byte, bool) {
	f := r.fresh
	if f.b == nil || f.base != offset {
		return nil, false
	}
	if f.next != r.log.EndOffset() && !mutantOn("fresh-survives-step") {
		return nil, false
	}
	r.hit(pReadFresh)
	return f.b, true
}
