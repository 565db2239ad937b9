package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
	"github.com/sluicemq/sluice/core/batch"
)

// producersReq asks for the producers of topics' partitions, in the order given.
func producersReq(topics ...kmsg.DescribeProducersRequestTopic) *kmsg.DescribeProducersRequest {
	req := kmsg.NewPtrDescribeProducersRequest()
	req.Version, req.Topics = maxVersion(kmsg.DescribeProducers), topics
	return req
}

func producersTopic(name string, parts ...int32) kmsg.DescribeProducersRequestTopic {
	t := kmsg.NewDescribeProducersRequestTopic()
	t.Topic, t.Partitions = name, parts
	return t
}

// activeProducers is a partition's list in a DescribeProducers answer.
type activeProducers = []kmsg.DescribeProducersResponseTopicPartitionActiveProducer

// producersPart is one partition's answer: its error code and producers.
type producersPart struct {
	code      int16
	producers activeProducers
}

// producersAnswer flattens an answer by "topic-partition".
type producersAnswer map[string]producersPart

func describeProducers(t *testing.T, resp kmsg.Response) producersAnswer {
	t.Helper()
	out := producersAnswer{}
	for _, rt := range resp.(*kmsg.DescribeProducersResponse).Topics {
		for _, rp := range rt.Partitions {
			key := tp(rt.Topic, rp.Partition).String()
			require.NotContains(t, out, key, "a partition is answered once")
			out[key] = producersPart{rp.ErrorCode, rp.ActiveProducers}
		}
	}
	return out
}

// activeProducer is the answer for a producer without a transaction.
func activeProducer(id int64, epoch int16, lastSeq int32,
	lastTs int64) kmsg.DescribeProducersResponseTopicPartitionActiveProducer {
	ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
	ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ap.LastTimestamp = id, int32(epoch),
		lastSeq, lastTs
	ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = -1, -1
	return ap
}

// initProducer gets a producer id from h.
func initProducer(t *testing.T, h *harness) batch.Producer {
	t.Helper()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version = maxVersion(kmsg.InitProducerID)
	ip := h.do(init).(*kmsg.InitProducerIDResponse)
	requireCode(t, nil, ip.ErrorCode)
	return batch.Producer{ID: ip.ProducerID, Epoch: ip.ProducerEpoch}
}

// idempotent is a batch of n records from p at sequence seq, written at tsMs.
func idempotent(p batch.Producer, seq int32, n int, tsMs int64) []byte {
	p.BaseSequence = seq
	kvs := make([]batch.KV, n)
	for i := range kvs {
		kvs[i] = batch.KV{Value: []byte("v")}
	}
	return batch.Build(kvs, p, tsMs)
}

// The producers of a partition are its idempotent writers, by id, with their epoch, the
// last sequence and the timestamp of their last batch; a producer without idempotence
// is not one. They survive a restart and a crash (rebuilt from the snapshot and the
// log). Partition errors: UNKNOWN_TOPIC_OR_PARTITION for a topic or partition that does
// not exist, INVALID_TOPIC_EXCEPTION for a name no topic can have.
func TestDescribeProducersListsIdempotentProducers(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 2)
	p1, p2 := initProducer(t, h), initProducer(t, h)
	for _, b := range [][]byte{idempotent(p2, 0, 3, 5_000), idempotent(p1, 0, 2, 6_000),
		values("not idempotent"), idempotent(p1, 2, 4, 7_000)} {
		requireCode(t, nil, producePart(t, h.do(produceReq(-1, "t", 0, b))).ErrorCode)
	}
	listed := activeProducers{activeProducer(p1.ID, p1.Epoch, 5, 7_000),
		activeProducer(p2.ID, p2.Epoch, 2, 5_000)}
	if p1.ID > p2.ID {
		listed[0], listed[1] = listed[1], listed[0]
	}
	unknown := producersPart{code: kerr.UnknownTopicOrPartition.Code}
	want := producersAnswer{"t-0": {producers: listed}, "t-1": {}, "t-9": unknown,
		"missing-0": unknown, "bad/name-0": {code: kerr.InvalidTopicException.Code}}
	req := func() *kmsg.DescribeProducersRequest {
		return producersReq(producersTopic("t", 0, 1, 9, 0), producersTopic("missing", 0),
			producersTopic("bad/name", 0))
	}
	require.Equal(t, want, describeProducers(t, h.do(req())))
	h.restart()
	require.Equal(t, want, describeProducers(t, h.do(req())), "after a restart")
	h.crash()
	require.Equal(t, want, describeProducers(t, h.do(req())), "after a crash")
}

// Each replica answers from its own producer table, a follower's rebuilt from the
// batches it fetched; a partition this node does not host is NOT_LEADER_OR_FOLLOWER.
func TestDescribeProducersOnLeaderFollowerAndOthers(t *testing.T) {
	c := newTestCluster(t, 2, 1, 2, 3)
	c.handFollowers = false
	c.commit(assignedTopicRecord("r", nil, pstate(ids(1, 2), ids(1, 2), 1, 0, 0)))
	p := initProducer(t, c.nodes[1])
	requireCode(t, nil, producePart(t, c.nodes[1].do(produceReq(1, "r", 0,
		idempotent(p, 0, 2, 9_000)))).ErrorCode)
	c.settle()
	c.advance(time.Second)
	want := activeProducers{activeProducer(p.ID, p.Epoch, 1, 9_000)}
	for _, id := range []int32{1, 2} {
		got := describeProducers(t, c.nodes[id].do(producersReq(producersTopic("r", 0))))
		requireCode(t, nil, got["r-0"].code, "node %d", id)
		require.Equal(t, want, got["r-0"].producers, "node %d", id)
	}
	got := describeProducers(t, c.nodes[3].do(producersReq(producersTopic("r", 0))))
	requireCode(t, kerr.NotLeaderForPartition, got["r-0"].code)
	require.Empty(t, got["r-0"].producers)
}

// DescribeProducers needs READ on the topic, as in Kafka: DESCRIBE is not enough. A
// refused topic is TOPIC_AUTHORIZATION_FAILED whether it exists or not; a name no
// topic can have is INVALID_TOPIC_EXCEPTION first.
func TestDescribeProducersNeedsTopicRead(t *testing.T) {
	h := newHarness(t, withAuthz)
	h.mustCreate("t", 1)
	h.mustCreate("u", 1)
	p := initProducer(t, h)
	requireCode(t, nil, producePart(t, h.do(produceReq(-1, "t", 0,
		idempotent(p, 0, 1, 1_000)))).ErrorCode)
	require.Equal(t, []int16{0, 0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpDescribe, acl.Allow),
		creation(acl.ResourceTopic, "u", acl.PatternLiteral, bob, acl.OpRead, acl.Allow)))
	req := func() *kmsg.DescribeProducersRequest {
		return producersReq(producersTopic("t", 0), producersTopic("u", 0),
			producersTopic("missing", 0), producersTopic("bad/name", 0))
	}
	got := describeProducers(t, h.doAs(bob, req()))
	requireCode(t, kerr.TopicAuthorizationFailed, got["t-0"].code, "DESCRIBE is not READ")
	require.Empty(t, got["t-0"].producers)
	requireCode(t, nil, got["u-0"].code)
	requireCode(t, kerr.TopicAuthorizationFailed, got["missing-0"].code)
	requireCode(t, kerr.InvalidTopicException, got["bad/name-0"].code)

	require.Equal(t, []int16{0}, h.createACLs(admin,
		creation(acl.ResourceTopic, "t", acl.PatternLiteral, bob, acl.OpRead, acl.Allow)))
	got = describeProducers(t, h.doAs(bob, req()))
	requireCode(t, nil, got["t-0"].code)
	require.Equal(t, activeProducers{activeProducer(p.ID, p.Epoch, 0, 1_000)},
		got["t-0"].producers)
}
