package sim

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassign moves one partition of topic to random brokers, as an operator adding or
// retiring a node would (AlterPartitionReassignments, KIP-455): a target of the run's
// replication factor, drawn from every node, or now and then a cancel of the move in
// progress. The move runs under the run's faults; the checkers then hold it to the
// same guarantees as everything else (no acknowledged record lost, replicas identical
// below the high-water mark, liveness after heal).
func (a *admin) reassign(topic string) {
	if a.findController() {
		return
	}
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = int32(a.timeout())
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition = int32(a.rnd.Intn(int(max(a.parts[topic], 1))))
	if !a.rnd.Chance(0.2) {
		ids := make([]int32, a.w.cfg.Nodes)
		for i := range ids {
			ids[i] = int32(i + 1)
		}
		for i := len(ids) - 1; i > 0; i-- { // Fisher-Yates, from the run's stream
			j := a.rnd.Intn(i + 1)
			ids[i], ids[j] = ids[j], ids[i]
		}
		rp.Replicas = ids[:a.w.cfg.replicationFactor()]
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	a.busyReq = true
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			resp := r.(*kmsg.AlterPartitionAssignmentsResponse)
			a.code("reassign", resp.ErrorCode)
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					a.code("reassign", p.ErrorCode)
				}
			}
		}
		a.next(err)
	})
}
