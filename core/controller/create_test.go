package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/meta"
)

// A manual assignment is kept as given; the ISR is its eligible replicas and the first
// of them leads. Kafka's checks refuse empty lists, a broker twice, unknown brokers,
// uneven replica counts and partitions none of whose replicas is eligible.
func TestCreateTopicHonoursAManualAssignment(t *testing.T) {
	h := newHarness(t, testConfig(), 3)
	h.settle()
	h.cluster(3, 0)
	h.register(4, 1, "") // registered, fenced
	id := h.ask(CreateTopic{Name: "m", Assignment: [][]int32{{3, 1}, {4, 2}}})
	h.settle()
	r := h.answer(id).(CreateTopicResponse)
	require.Zero(t, r.Err, r.Message)
	require.Equal(t, []meta.PartitionState{
		{Replicas: []int32{3, 1}, ISR: []int32{3, 1}, Leader: 3},
		{Replicas: []int32{4, 2}, ISR: []int32{2}, Leader: 2},
	}, h.image.Topic("m").States)
	require.Equal(t, int32(2), h.image.Topic("m").Partitions)
	require.Equal(t, int16(2), h.image.Topic("m").ReplicationFactor)

	for _, bad := range []struct {
		assign [][]int32
		why    string
	}{
		{[][]int32{{1}, {}}, "empty replica list"},
		{[][]int32{{1, 1}}, "broker 1 more than once"},
		{[][]int32{{1, 9}}, "broker 9, but no such broker is registered"},
		{[][]int32{{1, 2}, {3}}, "1 replica(s)"},
		{[][]int32{{4}}, "fenced or in controlled shutdown"},
	} {
		id := h.ask(CreateTopic{Name: "bad", Assignment: bad.assign})
		h.settle()
		r := h.answer(id).(CreateTopicResponse)
		require.Equal(t, codeInvalidReplicaAssignment, r.Err, "%v", bad.assign)
		require.Contains(t, r.Message, bad.why)
	}
	require.Nil(t, h.image.Topic("bad"))
}

// New partitions are placed with the topic's replication factor on live brokers, or
// as a manual assignment says; counts that do not grow the topic are refused, and an
// unassigned topic grows unassigned.
func TestCreatePartitionsPlacesTheNewPartitions(t *testing.T) {
	h := newHarness(t, testConfig(), 4)
	h.settle()
	h.cluster(3, 0)
	require.Zero(t, h.createTopic("t", 2, 2).Err)

	id := h.ask(CreatePartitions{Topic: "t", Count: 5})
	h.settle()
	r := h.answer(id).(CreatePartitionsResponse)
	require.Zero(t, r.Err, r.Message)
	require.Len(t, r.States, 3)
	tp := h.image.Topic("t")
	require.Equal(t, int32(5), tp.Partitions)
	require.Len(t, tp.States, 5)
	for _, s := range tp.States {
		require.Len(t, s.Replicas, 2)
		require.NotEqual(t, s.Replicas[0], s.Replicas[1])
		require.Equal(t, s.Replicas, s.ISR)
		require.Equal(t, s.Replicas[0], s.Leader)
	}

	id = h.ask(CreatePartitions{Topic: "t", Count: 6, Assignment: [][]int32{{2, 3}}})
	h.settle()
	require.Zero(t, h.answer(id).ErrCode())
	require.Equal(t, []int32{2, 3}, h.image.Topic("t").States[5].Replicas)

	refused := func(m CreatePartitions) CreatePartitionsResponse {
		id := h.ask(m)
		h.settle()
		return h.answer(id).(CreatePartitionsResponse)
	}
	require.Equal(t, codeInvalidPartitions, refused(CreatePartitions{Topic: "t", Count: 6}).Err)
	require.Equal(t, codeUnknownTopicPartition,
		refused(CreatePartitions{Topic: "nope", Count: 6}).Err)
	require.Equal(t, codeUnknownTopicPartition,
		refused(CreatePartitions{Topic: "t", TopicID: [16]byte{9}, Count: 7}).Err,
		"a request validated against another topic of the name")
	r = refused(CreatePartitions{Topic: "t", Count: 7, Assignment: [][]int32{{1}}})
	require.Equal(t, codeInvalidReplicaAssignment, r.Err, "one replica, the topic has two")
	r = refused(CreatePartitions{Topic: "t", Count: 8, Assignment: [][]int32{{1, 2}}})
	require.Equal(t, codeInvalidReplicaAssignment, r.Err, "two new partitions, one list")
	r = refused(CreatePartitions{Topic: "t", Count: 7})
	require.Zero(t, r.Err)

	// Too few live brokers for the topic's factor.
	require.Zero(t, h.createTopic("wide", 1, 3).Err)
	h.commitRecord(meta.Record{Kind: meta.KindBrokerChange, NodeID: 3,
		BrokerEpoch: mustBroker(t, h.image, 3).Epoch, BrokerState: meta.BrokerFenced})
	require.Equal(t, codeInvalidReplication,
		refused(CreatePartitions{Topic: "wide", Count: 2}).Err)

	// A topic created before placement existed grows without states.
	h.commitRecord(meta.Record{Kind: meta.KindTopicCreated, Topic: "old", TopicID: [16]byte{7},
		Partitions: 1, ReplicationFactor: 1})
	require.Zero(t, refused(CreatePartitions{Topic: "old", Count: 3}).Err)
	require.Equal(t, int32(3), h.image.Topic("old").Partitions)
	require.Nil(t, h.image.Topic("old").States)
}

func mustBroker(t *testing.T, im *meta.Image, id int32) meta.Broker {
	b, ok := im.Broker(id)
	require.True(t, ok)
	return b
}
