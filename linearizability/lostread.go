package linearizability

// LostRead: a record a consumer read must stay readable at its offset. A fetch returns
// only records below the high-water mark, and Kafka promises that what lies below it is
// committed: with unclean leader election off, no later leader lacks it. A read record
// that the final read no longer has (its offset at or past the final high-water mark,
// and not removed from the front by retention, DeleteRecords or rot, which move the
// final read's start past it) was exposed before it was committed. A different value
// at that offset is already an inconsistent-offset. This is Jepsen's wider notion of a
// lost write (a write known to be committed, acknowledged or read, that disappears)
// applied to the writes only reads show, the unacknowledged and acks=0/1 ones.
//
// Only reads that ended before the final read began count: the workload may still
// write meanwhile, past the end the final read set out to cover.
//
// Excused: with log.flush.policy=never on some topic and a power loss in the run, the
// high-water mark may cover records only the page cache held, as with lost-write.
const LostRead = "lost-read" // read below its HWM, gone from the final read

func (v *view) checkReadsKept() {
	if !v.hasFin || (v.h.FlushNever && len(v.h.Crashes) > 0) {
		return
	}
	finalAt := int64(-1) // when the final read began; writes may go on meanwhile
	for _, r := range v.reads {
		if r.Final && (finalAt < 0 || r.Call < finalAt) {
			finalAt = r.Call
		}
	}
	for _, r := range v.reads {
		if r.Final || r.Return >= finalAt {
			continue
		}
		for _, rec := range r.Records {
			_, kept := v.finals[rec.Offset]
			if kept || rec.Offset < v.final.Start || rec.Offset < v.final.End ||
				rec.Offset >= r.HWM {
				continue // kept (checked by observe), trimmed, or already read-past-hwm
			}
			v.flag(LostRead, rec.Offset, "read %q at %d (op %d, HWM %d), final high-water"+
				" mark %d", rec.Value, rec.Offset, r.ID, r.HWM, v.final.End)
			return
		}
	}
}
