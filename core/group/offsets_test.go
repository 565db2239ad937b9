package group

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

func consumerMetadata(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

func TestOffsetRecordRoundTrip(t *testing.T) {
	tp := core.TopicPartition{Topic: "orders", Partition: 7}
	k := EncodeKey("my-group", tp)
	g, gotTP, err := DecodeKey(k)
	require.NoError(t, err)
	require.Equal(t, "my-group", g)
	require.Equal(t, tp, gotTP)

	o := Offset{Offset: 1 << 40, LeaderEpoch: -1, Metadata: "m", CommitMs: 1234}
	got, err := DecodeValue(EncodeValue(o))
	require.NoError(t, err)
	require.Equal(t, o, got)
}

func TestOffsetRecordKafkaLayout(t *testing.T) {
	// Kafka's key v1 for ("g", "t", 1) and value v3 for offset 2, epoch 3, "", ts 4.
	require.Equal(t, []byte{0, 1, 0, 1, 'g', 0, 1, 't', 0, 0, 0, 1},
		EncodeKey("g", core.TopicPartition{Topic: "t", Partition: 1}))
	require.Equal(t, []byte{0, 3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 4}, EncodeValue(Offset{Offset: 2, LeaderEpoch: 3, CommitMs: 4}))
}

func TestOffsetRecordDecodeRejectsGarbage(t *testing.T) {
	_, _, err := DecodeKey([]byte{0, 2, 0, 1, 'g'}) // a group-metadata key
	require.ErrorIs(t, err, ErrNotOffsetRecord)
	for _, b := range [][]byte{nil, {0}, {0, 1, 0, 9, 'g'}, append(EncodeKey("g",
		core.TopicPartition{}), 0)} {
		_, _, err := DecodeKey(b)
		require.Error(t, err, "%x", b)
	}
	_, err = DecodeValue([]byte{0, 3, 1})
	require.Error(t, err)
	_, err = DecodeValue([]byte{0, 9})
	require.Error(t, err)
}

func TestPartitionIsStable(t *testing.T) {
	// FNV-1a is part of the storage format: these values must never change.
	require.Equal(t, int32(Partition("", 8)), int32(0x811c9dc5%8))
	for _, g := range []string{"a", "group-1", "kcat"} {
		p := Partition(g, 50)
		require.GreaterOrEqual(t, p, int32(0))
		require.Less(t, p, int32(50))
		require.Equal(t, p, Partition(g, 50))
	}
	require.Equal(t, int32(0), Partition("x", 0))
}

func TestOffsetsWhereSelectsCommittedAndInFlightOffsets(t *testing.T) {
	c := NewCoordinator(DefaultConfig(), &testRand{})
	tp := func(topic string, p int32) core.TopicPartition {
		return core.TopicPartition{Topic: topic, Partition: p}
	}
	c.ApplyOffset("b", tp("t", 1), &Offset{Offset: 1})
	c.ApplyOffset("b", tp("t", 0), &Offset{Offset: 1})
	c.ApplyOffset("b", tp("u", 0), &Offset{Offset: 1})
	c.WriteStarted("a", []core.TopicPartition{tp("t", 2)}) // a first commit: no group yet
	c.WriteStarted("b", []core.TopicPartition{tp("t", 0)})
	got := c.OffsetsWhere(func(x core.TopicPartition) bool { return x.Topic == "t" })
	require.Equal(t, []Expired{
		{Group: "a", TPs: []core.TopicPartition{tp("t", 2)}},
		{Group: "b", TPs: []core.TopicPartition{tp("t", 0), tp("t", 1)}},
	}, got)
	require.Empty(t, c.OffsetsWhere(func(core.TopicPartition) bool { return false }))
	_, ok := c.Offset("b", tp("t", 0))
	require.True(t, ok, "nothing changes")
}
