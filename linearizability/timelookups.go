package linearizability

import (
	"sort"

	"github.com/sluicemq/sluice/core"
)

// ListOffsets by timestamp, checked exactly (docs/simulation.md, "What is checked").
//
// The answer to a lookup of target T is the first record, in offset order, among those
// from the log start offset S to the high-water mark H when the broker handled it, whose
// timestamp is at least T, with that record's timestamp; or none (offset -1). With
// truthful batch headers this is Kafka's answer too (the first batch whose max
// timestamp reaches T, then its first record at or after T and at or after S).
//
// The checker knows the timestamps of the records the reads observed (Record.Timestamp)
// and the log start only from reads. It flags an answer when
//   - the answered record was observed with another timestamp, or one before T;
//   - an observed record before the answer, at or above U, has a timestamp at or after
//     T, U being an upper bound of S at the lookup: the log start a fetch sent after the
//     lookup returned reported, with no crash from the lookup's call to that fetch's
//     return (the log start only moves up, except that a crash may take back one not
//     yet durable);
//   - the answer is none, but an observed record at or above U and below a high-water
//     mark a read returned before the lookup was sent has a timestamp at or after T.
//
// Records below the high-water mark never change (log.flush.policy=always makes it the
// durable end), so a record observed at any time is the one the lookup saw. Under
// log.flush.policy=never a crash may replace them, and seeds with both are not
// checked. Records nobody observed are not judged: the check may miss, never invent.

// TimeMismatch is the anomaly: a ListOffsets by timestamp that did not answer the first
// record at or after the time asked.
const TimeMismatch = "time-lookup-wrong"

// TimeLookup is one ListOffsets by timestamp a client was answered without error.
type TimeLookup struct {
	TP           core.TopicPartition
	Call, Return int64 // virtual ns
	Target       int64 // the timestamp asked for (ms)
	Offset       int64 // the answer; -1: no record at or after Target
	Timestamp    int64 // the answered record's timestamp
}

// splitLookups keys each lookup by the topic incarnation it ran against, dropping those
// whose window holds a deletion of their topic.
func splitLookups(in []TimeLookup, at map[string][]int64) []TimeLookup {
	out := make([]TimeLookup, 0, len(in))
	for _, q := range in {
		if ts, ok := at[q.TP.Topic]; ok {
			lo := countBefore(ts, q.Call, false)
			if lo != countBefore(ts, q.Return, true) {
				continue
			}
			q.TP.Topic = IncarnationTopic(q.TP.Topic, lo)
		}
		out = append(out, q)
	}
	return out
}

// stamps is every observed record's timestamp of one partition, by offset.
type stamps struct {
	offs []int64
	ts   []int64
	max  *maxTable
}

func (v *view) stamps() *stamps {
	seen := map[int64]int64{}
	for _, r := range v.reads {
		for _, rec := range r.Records {
			if rec.Timestamp < 0 || v.bad[rec.Offset] {
				continue
			}
			if prev, ok := seen[rec.Offset]; ok && prev != rec.Timestamp {
				seen[rec.Offset] = -1 // two timestamps: not judged
				continue
			}
			seen[rec.Offset] = rec.Timestamp
		}
	}
	s := &stamps{}
	for off, ts := range seen {
		if ts >= 0 {
			s.offs = append(s.offs, off)
		}
	}
	sort.Slice(s.offs, func(i, j int) bool { return s.offs[i] < s.offs[j] })
	s.ts = make([]int64, len(s.offs))
	for i, off := range s.offs {
		s.ts[i] = seen[off]
	}
	s.max = newMaxTable(len(s.ts), func(i int) int64 { return s.ts[i] })
	return s
}

// reaching returns the first observed offset in [lo, hi) whose timestamp is at least
// target, or -1.
func (s *stamps) reaching(lo, hi, target int64) int64 {
	i := sort.Search(len(s.offs), func(i int) bool { return s.offs[i] >= lo })
	j := sort.Search(len(s.offs), func(i int) bool { return s.offs[i] >= hi })
	if k := s.max.argmax(i, j); k < 0 || s.ts[k] < target {
		return -1
	}
	for ; i < j; i++ {
		if s.ts[i] >= target {
			return s.offs[i]
		}
	}
	return -1
}

func (s *stamps) at(off int64) (int64, bool) {
	i := sort.Search(len(s.offs), func(i int) bool { return s.offs[i] >= off })
	if i < len(s.offs) && s.offs[i] == off {
		return s.ts[i], true
	}
	return 0, false
}

// checkTimeLookups flags ListOffsets-by-timestamp answers that are not the first
// observed record at or after the time asked (see the comment at the top).
func (v *view) checkTimeLookups() {
	var qs []TimeLookup
	for _, q := range v.h.TimeLookups {
		if q.TP == v.tp {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 || (v.h.FlushNever && len(v.h.Crashes) > 0) {
		return
	}
	s := v.stamps()
	for _, q := range qs {
		if q.Offset >= 0 {
			if ts, ok := s.at(q.Offset); ok && (ts != q.Timestamp || ts < q.Target) {
				v.flag(TimeMismatch, q.Offset, "ListOffsets by time %d answered offset %d "+
					"with timestamp %d; that record's timestamp is %d", q.Target, q.Offset,
					q.Timestamp, ts)
				return
			}
		}
		start, ok := v.startBound(q)
		if !ok {
			continue
		}
		end := q.Offset
		if end < 0 {
			end = v.hwmBefore(q.Call)
		}
		if p := s.reaching(start, end, q.Target); p >= 0 {
			ts, _ := s.at(p)
			v.flag(TimeMismatch, p, "ListOffsets by time %d (called %s, answered %s) "+
				"answered offset %d, but offset %d, above the log start (at most %d), has "+
				"timestamp %d", q.Target, fmtNs(q.Call), fmtNs(q.Return), q.Offset, p,
				start, ts)
			return
		}
	}
}

// startBound returns an upper bound of the log start offset when the broker handled q:
// the smallest one a fetch sent after q returned reported, with no crash between q's
// call and that fetch's return.
func (v *view) startBound(q TimeLookup) (int64, bool) {
	crash := v.h.firstCrashFrom(q.Call)
	bound, ok := int64(0), false
	for _, r := range v.reads {
		if r.FetchOffset < 0 || r.LogStart < 0 || r.Call < q.Return || r.Return >= crash {
			continue
		}
		if !ok || r.LogStart < bound {
			bound, ok = r.LogStart, true
		}
	}
	return bound, ok
}

// hwmBefore returns the highest high-water mark a read that returned before t saw (0:
// none). The high-water mark never goes back within an incarnation.
func (v *view) hwmBefore(t int64) int64 {
	var hwm int64
	for _, r := range v.reads {
		if r.Return < t {
			hwm = max(hwm, r.HWM)
		}
	}
	return hwm
}

// firstCrashFrom returns the time of the first crash at or after t (MaxInt64: none).
func (h *History) firstCrashFrom(t int64) int64 {
	first := int64(1<<63 - 1)
	for _, c := range h.Crashes {
		if c.At >= t {
			first = min(first, c.At)
		}
	}
	return first
}
