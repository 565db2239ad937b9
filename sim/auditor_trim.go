package sim

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
)

// trimTopic is the auditor's own topic for freshTrim: no other client writes or reads
// it, so trimming it to its end takes nothing from the checkers.
const trimTopic = "audit-trim"

// freshTrim writes a small batch with acks=1 to the auditor's own topic, which the
// broker answers once it is written, before its fsync, and at once asks DeleteRecords
// up to the batch's end: an offset between the high-water mark and the log end while
// the fsync runs. The broker must then refuse it with OFFSET_OUT_OF_RANGE, as Kafka
// refuses any offset above the high-water mark; once the fsync is done it is an
// ordinary trim to the high-water mark. Accepting it too early leaves the log starting
// past its high-water mark: invariant R1 in the replica fails, and so does the fetch
// this client sends right after an accepted call.
func (a *auditor) freshTrim() {
	if !a.trimOK {
		a.createTrimTopic()
		return
	}
	tp := core.TopicPartition{Topic: trimTopic}
	n := 1 + a.rnd.Intn(3)
	kvs := make([]batch.KV, n)
	for i := range kvs {
		kvs[i] = batch.KV{Key: []byte("audit"), Value: []byte("fresh")}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, int32(a.timeout())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch.Build(kvs, batch.NoProducer, (epochNs+a.w.now)/int64(ms))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Only this client writes the topic, so the log end after this write is known
	// (unless a write's outcome was lost or a crash took unsynced writes back: the
	// guess is then wrong, which is harmless, and the next answer corrects it). The
	// DeleteRecords follows the produce on the same connection at once, so the broker
	// sees it while the write's fsync runs.
	pipelined, guess := a.trimEnd >= 0, a.trimEnd+int64(n)
	a.trimEnd = -1
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		code, base := int16(-1), int64(-1)
		if err == nil {
			for _, t := range r.(*kmsg.ProduceResponse).Topics {
				for _, p := range t.Partitions {
					a.code("produce", p.ErrorCode)
					code, base = p.ErrorCode, p.BaseOffset
				}
			}
		}
		switch code {
		case 0:
			a.trimEnd = base + int64(n)
		case kerr.UnknownTopicOrPartition.Code:
			a.trimOK = false
		}
		switch {
		case pipelined:
		case code == 0:
			a.trimTo(tp, base+int64(n))
		default:
			a.next(err)
		}
	})
	if pipelined {
		a.trimTo(tp, guess)
	}
}

func (a *auditor) createTrimTopic() {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(a.timeout())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = trimTopic, 1, a.w.cfg.replicationFactor()
	req.Topics = append(req.Topics, rt)
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.CreateTopicsResponse).Topics {
				a.code("create-topics", t.ErrorCode)
				a.trimOK = t.ErrorCode == 0 || t.ErrorCode == kerr.TopicAlreadyExists.Code
				if t.ErrorCode == 0 {
					a.trimEnd = 0 // a new topic: empty
				}
			}
		}
		a.next(err)
	})
}

// trimTo asks tp to start at offset, just after the write that ends there was
// acknowledged; an accepted call is followed by a fetch that must not report a log
// start above the high-water mark.
func (a *auditor) trimTo(tp core.TopicPartition, offset int64) {
	req := deleteRecordsRequest(tp.Topic, tp.Partition, offset, a.timeout())
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err != nil {
			a.next(err)
			return
		}
		for _, t := range r.(*kmsg.DeleteRecordsResponse).Topics {
			for _, p := range t.Partitions {
				a.code("delete-records", p.ErrorCode)
				switch {
				case p.ErrorCode == 0 && p.LowWatermark < offset:
					a.failf("DeleteRecords %s before %d answered low watermark %d", tp,
						offset, p.LowWatermark)
				case p.ErrorCode == 0:
					a.trimmedFetch(tp, offset)
					return
				}
			}
		}
		a.next(nil)
	})
}

// trimmedFetch fetches tp at its new log start: the answer's log start must not be
// above its high-water mark (unless a crash may take acknowledged data back).
func (a *auditor) trimmedFetch(tp core.TopicPartition, offset int64) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = tp.Partition, offset, 1<<20
	rp.CurrentLeaderEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	unsafe := a.w.cfg.Broker["log.flush.policy"] == "never"
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.FetchResponse).Topics {
				for _, p := range t.Partitions {
					a.code("fetch", p.ErrorCode)
					if p.ErrorCode == 0 && !unsafe && p.LogStartOffset > p.HighWatermark {
						a.failf("DeleteRecords %s before %d was accepted above the "+
							"high-water mark: a fetch then saw log start %d, high-water "+
							"mark %d", tp, offset, p.LogStartOffset, p.HighWatermark)
					}
				}
			}
		}
		a.next(err)
	})
}

// deleteRecordsRequest asks one partition to start at offset.
func deleteRecordsRequest(topic string, partition int32, offset,
	timeoutMs int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = int32(timeoutMs)
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
