package broker

// DescribeProducers (key 61), version 0 (KIP-664).
//
// Per asked partition, the idempotent producers its replica's producer table holds
// (replica.ActiveProducers): id, epoch, last sequence and the max timestamp of its last
// batch. CoordinatorEpoch and CurrentTxnStartOffset are -1: there are no transactions
// yet. As in Kafka, a replica answers whether it leads or follows (kadm asks the
// leader; kafka-transactions.sh describe-producers --broker-id may ask a follower,
// whose table is rebuilt from the same batches). Errors, per partition:
//   - a topic name that is not valid → INVALID_TOPIC_EXCEPTION;
//   - no READ on the topic → TOPIC_AUTHORIZATION_FAILED (authorize_admin.go), before
//     the topic's existence is told;
//   - a topic the image does not have, or a partition beyond its count →
//     UNKNOWN_TOPIC_OR_PARTITION;
//   - a partition of another node → NOT_LEADER_OR_FOLLOWER; one whose log is still
//     opening → LEADER_NOT_AVAILABLE; one whose log did not open or went offline →
//     KAFKA_STORAGE_ERROR.
//
// A partition named twice in a request is answered once: the answer holds up to
// 10 000 producers per partition (the table's bound), and a client must not make the
// node repeat that by repeating an index.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

func (rm *replicaManager) handleDescribeProducers(m *kmsg.DescribeProducersRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.DescribeProducersResponse)
	seen := map[core.TopicPartition]bool{}
	for _, t := range m.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		var topicCode int16
		switch {
		case topicNameProblem(t.Topic) != "":
			topicCode = kerr.InvalidTopicException.Code
		case rm.image.Topic(t.Topic) == nil:
			topicCode = kerr.UnknownTopicOrPartition.Code
		}
		for _, p := range t.Partitions {
			tp := core.TopicPartition{Topic: t.Topic, Partition: p}
			if seen[tp] {
				continue
			}
			seen[tp] = true
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, topicCode
			if topicCode == 0 {
				rm.describeProducers(tp, &rp)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// describeProducers fills rp with tp's producers, or with why it cannot.
func (rm *replicaManager) describeProducers(tp core.TopicPartition,
	rp *kmsg.DescribeProducersResponseTopicPartition) {
	rep, code := rm.replicaFor(tp)
	if code == 0 && rep.Offline() {
		code = kerr.KafkaStorageError.Code
	}
	if code != 0 {
		rp.ErrorCode = code
		return
	}
	for _, s := range rep.ActiveProducers() {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID, ap.ProducerEpoch = s.ID, int32(s.Epoch)
		ap.LastSequence, ap.LastTimestamp = s.LastSequence, s.LastTimestamp
		ap.CoordinatorEpoch = -1
		rp.ActiveProducers = append(rp.ActiveProducers, ap)
	}
}
