package sim

import (
	"bytes"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/replica"
)

// replica-diverged for the offsets topic, which is compacted (docs/storage.md,
// "Compaction"): each replica cleans on its own schedule, so its bytes differ from its
// leader's by design, and compareReplicas cannot compare them. What must hold instead,
// below the leader's high-water mark: an offset both replicas still hold a record at
// holds the same key and value in both, and a record one of them holds that the other
// does not was removed by the other's cleaner, which only removes a record whose key
// has a later one in that log (tombstones stay delete.retention.ms, 24 h, beyond a
// run). So two replicas that took different records at an offset, or one that lost a
// key's last record, fail it.

// keyedRecord is one record of a compacted log, by offset.
type keyedRecord struct{ key, value []byte }

// compactedLog is what compareCompacted reads of one replica: its records below the
// high-water mark, and the offset of the last record of each key in its whole log.
type compactedLog struct {
	records map[int64]keyedRecord
	last    map[string]int64
}

// compareCompacted is compareReplicas for a compacted partition (the offsets topic).
func (w *World) compareCompacted(tp core.TopicPartition, lid int32, lead *replica.Replica,
	fid int32, f *replica.Replica, from, hwm int64) {
	ll, lerr := readCompacted(lead, from, hwm)
	fl, ferr := readCompacted(f, from, hwm)
	if lerr != nil || ferr != nil {
		w.fail("replica-diverged", "%s: reading [%d, %d) of the compacted log: leader %d: "+
			"%v, replica %d: %v", tp, from, hwm, lid, lerr, fid, ferr)
		return
	}
	if msg := compactedDiff(ll, fl, "leader", "replica"); msg != "" {
		w.fail("replica-diverged", "%s: replica %d and leader %d below the high-water "+
			"mark %d: %s", tp, fid, lid, hwm, msg)
		return
	}
	if msg := compactedDiff(fl, ll, "replica", "leader"); msg != "" {
		w.fail("replica-diverged", "%s: replica %d and leader %d below the high-water "+
			"mark %d: %s", tp, fid, lid, hwm, msg)
	}
}

// compactedDiff checks every record a holds below the mark against b: the same record
// at its offset, or a later record of its key in b (b's cleaner removed it).
func compactedDiff(a, b compactedLog, aName, bName string) string {
	for off, ra := range a.records {
		rb, ok := b.records[off]
		switch {
		case ok && (!bytes.Equal(ra.key, rb.key) || !bytes.Equal(ra.value, rb.value)):
			return fmt.Sprintf("offset %d holds different records (key %q)", off, ra.key)
		case !ok && b.last[string(ra.key)] <= off:
			return fmt.Sprintf("the %s lacks the record at offset %d (key %q) that the %s "+
				"holds, and has no later record of its key", bName, off, ra.key, aName)
		}
	}
	return ""
}

// readCompacted reads r from offset from to its log end.
func readCompacted(r *replica.Replica, from, hwm int64) (compactedLog, error) {
	l := compactedLog{records: map[int64]keyedRecord{}, last: map[string]int64{}}
	for off, end := from, r.EndOffset(); off < end; {
		res := r.ReadForFollower(off, 1<<20)
		if res.Err != 0 {
			return l, fmt.Errorf("error code %d at %d", res.Err, off)
		}
		next := off
		err := batch.SplitStored(res.Records, func(h batch.Header, raw []byte) error {
			if h.NextOffset() <= off {
				return nil
			}
			next = h.NextOffset()
			return l.add(h, raw, from, hwm)
		})
		if err != nil {
			return l, fmt.Errorf("at %d: %w", off, err)
		}
		if next == off {
			return l, fmt.Errorf("no batch at %d below %d", off, end)
		}
		off = next
	}
	return l, nil
}

// add records the records of one batch.
func (l *compactedLog) add(h batch.Header, raw []byte, from, hwm int64) error {
	return eachStoredRecord(raw, h, func(off int64, r *kmsg.Record) error {
		l.last[string(r.Key)] = max(l.last[string(r.Key)], off)
		if off >= from && off < hwm {
			l.records[off] = keyedRecord{key: r.Key, value: r.Value}
		}
		return nil
	})
}

// compactedByCleaner says whether tp's replicas compare as compacted logs.
func compactedByCleaner(tp core.TopicPartition) bool { return tp.Topic == group.OffsetsTopic }
