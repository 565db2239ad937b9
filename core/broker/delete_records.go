package broker

// DeleteRecords (API key 21), versions 0–2.
//
// Behaviour: raises each partition's log start offset to the given offset (-1 means
// the high-water mark) durably, then removes whole segments below it. An offset above
// the high-water mark gets OFFSET_OUT_OF_RANGE; one below the current start is a no-op
// that reports the current start as the low watermark. A leader with ISR followers
// answers once each of them reported, with a fetch, a log start at least the offset
// (Kafka's DelayedDeleteRecords, over the ISR), or answers REQUEST_TIMED_OUT for that
// partition after the request's timeout: a new leader, which comes from the ISR, then
// serves nothing below an acknowledged log start.

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/probe"
)

// Code probe: a DeleteRecords waited for its ISR followers' log starts.
var pDeleteRecordsWaited = probe.Register("broker/delete-records-waited-for-isr")

// pendingDelete is a DeleteRecords answer waiting for the followers' log starts.
type pendingDelete struct {
	req   Request
	resp  *kmsg.DeleteRecordsResponse
	waits []deleteWait
	timer uint64
}

// deleteWait is one partition of a pendingDelete: its answer is final once the low
// watermark reached offset.
type deleteWait struct {
	tp     core.TopicPartition
	ti, pi int // its place in the response
	offset int64
}

func (rm *replicaManager) handleDeleteRecords(r Request, m *kmsg.DeleteRecordsRequest) {
	resp := m.ResponseKind().(*kmsg.DeleteRecordsResponse)
	var waits []deleteWait
	for ti, t := range m.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark = p.Partition, -1
			tp := core.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			rep, code := rm.replicaFor(tp)
			if code == 0 {
				code = rm.checkLeader(tp, -1)
			}
			if code == 0 {
				rp.LowWatermark, code = rep.DeleteRecordsBefore(p.Offset)
			}
			if code == 0 && rep.LowWatermark() < rp.LowWatermark &&
				!mutantOn("delete-records-before-isr") {
				waits = append(waits, deleteWait{tp: tp, ti: ti, pi: pi,
					offset: rp.LowWatermark})
			}
			rp.ErrorCode = code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(waits) == 0 {
		rm.reply(r, resp)
		return
	}
	rm.hit(pDeleteRecordsWaited)
	d := &pendingDelete{req: r, resp: resp, waits: waits}
	rm.deletes = append(rm.deletes, d)
	d.timer = rm.setTimer(rm.now.AddMillis(int64(max(m.TimeoutMillis, 0))),
		brokerTimer{kind: timerDeleteRecords, deletion: d})
}

// deletesAdvanced answers the waiting DeleteRecords of tp whose offsets its low
// watermark reached (a follower of tp fetched, reporting its log start).
func (rm *replicaManager) deletesAdvanced(tp core.TopicPartition) {
	if len(rm.deletes) == 0 {
		return
	}
	rep := rm.replicas[tp]
	kept := rm.deletes[:0]
	for _, d := range rm.deletes {
		left := d.waits[:0]
		for _, w := range d.waits {
			switch {
			case w.tp != tp:
				left = append(left, w)
			case rep == nil || rep.Follower():
				d.part(w).ErrorCode = kerr.NotLeaderForPartition.Code
			case rep.LowWatermark() >= w.offset:
				d.part(w).LowWatermark = rep.LowWatermark()
			default:
				left = append(left, w)
			}
		}
		d.waits = left
		if len(left) > 0 {
			kept = append(kept, d)
			continue
		}
		rm.cancelTimer(d.timer)
		rm.reply(d.req, d.resp)
	}
	clear(rm.deletes[len(kept):])
	rm.deletes = kept
}

// deleteTimedOut answers a waiting DeleteRecords: the partitions still waiting get
// REQUEST_TIMED_OUT (their leader's log start moved; its followers' may not have).
func (rm *replicaManager) deleteTimedOut(d *pendingDelete) {
	for _, w := range d.waits {
		p := d.part(w)
		p.ErrorCode, p.LowWatermark = kerr.RequestTimedOut.Code, -1
	}
	d.waits = nil
	kept := rm.deletes[:0]
	for _, o := range rm.deletes {
		if o != d {
			kept = append(kept, o)
		}
	}
	clear(rm.deletes[len(kept):])
	rm.deletes = kept
	rm.reply(d.req, d.resp)
}

func (d *pendingDelete) part(w deleteWait) *kmsg.DeleteRecordsResponseTopicPartition {
	return &d.resp.Topics[w.ti].Partitions[w.pi]
}

// describe lists what a waiting DeleteRecords waits for (pending.go).
func (d *pendingDelete) describe() string {
	parts := make([]string, len(d.waits))
	for i, w := range d.waits {
		parts[i] = fmt.Sprintf("%s>=%d", w.tp, w.offset)
	}
	return "low watermark " + strings.Join(parts, " ")
}
