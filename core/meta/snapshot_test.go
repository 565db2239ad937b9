package meta

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestSnapshotRebuildsTheImage(t *testing.T) {
	im := NewImage()
	for _, r := range []Record{
		{Kind: KindTopicCreated, Topic: "b", TopicID: [16]byte{2}, Partitions: 1,
			ReplicationFactor: 1, Configs: []Config{{"retention.ms", "5"}}},
		{Kind: KindTopicCreated, Topic: "a", TopicID: [16]byte{1}, Partitions: 2},
		{Kind: KindPartitionsAdded, Topic: "a", Partitions: 4},
		{Kind: KindConfigsAltered, Topic: "b", Configs: []Config{{"segment.ms", "9"}}},
		{Kind: KindProducerIDBlock, NextProducerID: 1000},
		{Kind: KindTopicCreated, Topic: "c", TopicID: [16]byte{3}, Partitions: 1},
		{Kind: KindTopicDeleted, Topic: "c"},
	} {
		require.NoError(t, im.Apply(r))
	}
	again := NewImage()
	for _, r := range im.Snapshot() {
		require.NoError(t, again.Apply(r))
	}
	require.True(t, im.Equal(again))
	require.Equal(t, []string{"a", "b"}, again.TopicNames())
	require.Equal(t, int32(4), again.Topic("a").Partitions)
	require.Equal(t, int64(1000), again.NextProducerID())
	require.NoError(t, again.Apply(Record{Kind: KindProducerIDBlock, NextProducerID: 2000}))
	require.False(t, im.Equal(again))
}

// TestSnapshotRoundTripProperty applies random records (many refused, as a late
// duplicate would be) to an image, then rebuilds it from its snapshot after a trip
// through the on-disk encoding: the two images are equal, and every later record
// applies to both alike.
func TestSnapshotRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		im := NewImage()
		for range rapid.IntRange(0, 60).Draw(t, "n") {
			_ = im.Apply(drawRecord(t, im))
		}
		enc, err := json.Marshal(im.Snapshot())
		require.NoError(t, err)
		var recs []Record
		require.NoError(t, json.Unmarshal(enc, &recs))
		again := NewImage()
		for _, r := range recs {
			require.NoError(t, again.Apply(r), "%+v", r)
		}
		require.True(t, im.Equal(again))
		for range rapid.IntRange(0, 10).Draw(t, "more") {
			r := drawRecord(t, im)
			require.Equal(t, im.Apply(r) == nil, again.Apply(r) == nil, "%+v", r)
		}
		require.True(t, im.Equal(again))
	})
}

// drawRecord draws a record of any kind, often one that applies to im.
func drawRecord(t *rapid.T, im *Image) Record {
	node := rapid.Int32Range(0, 4)
	topic := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "topic")
	switch rapid.IntRange(0, 10).Draw(t, "kind") {
	case 0:
		n := rapid.Int32Range(1, 3).Draw(t, "parts")
		var states []PartitionState
		if rapid.Bool().Draw(t, "assigned") {
			for range n {
				states = append(states, drawState(t, 0, 0))
			}
		}
		return Record{Kind: KindTopicCreated, Topic: topic, TopicID: [16]byte{byte(n)},
			Partitions: n, ReplicationFactor: 1, PartitionStates: states,
			Configs: []Config{{"retention.ms", "1"}}}
	case 1:
		tp := im.Topic(topic)
		if tp == nil {
			return Record{Kind: KindPartitionsAdded, Topic: topic, Partitions: 2}
		}
		r := Record{Kind: KindPartitionsAdded, Topic: topic, Partitions: tp.Partitions + 1}
		if tp.States != nil {
			r.PartitionStates = []PartitionState{drawState(t, 0, 0)}
		}
		return r
	case 2:
		return Record{Kind: KindTopicDeleted, Topic: topic}
	case 3:
		return Record{Kind: KindConfigsAltered, Topic: topic,
			Configs: []Config{{"segment.ms", "7"}}}
	case 4:
		return Record{Kind: KindProducerIDBlock,
			NextProducerID: im.NextProducerID() + rapid.Int64Range(-1, 2).Draw(t, "pid")}
	case 5:
		return Record{Kind: KindClusterCreated, ClusterID: "cluster"}
	case 6:
		return Record{Kind: KindBrokerRegistered, NodeID: node.Draw(t, "node"),
			Incarnation: [16]byte{byte(rapid.IntRange(0, 3).Draw(t, "inc"))},
			BrokerEpoch: im.MaxBrokerEpoch() + rapid.Int64Range(0, 2).Draw(t, "epoch"),
			Host:        "h", Port: 9092, Rack: rapid.SampledFrom([]string{"", "r1"}).Draw(t, "rack")}
	case 7:
		id := node.Draw(t, "node")
		b, _ := im.Broker(id)
		return Record{Kind: KindBrokerChange, NodeID: id, BrokerEpoch: b.Epoch,
			BrokerState: BrokerState(rapid.IntRange(0, 2).Draw(t, "state"))}
	case 9:
		return drawQuotaRecord(t)
	case 10:
		id := node.Draw(t, "node")
		b, _ := im.Broker(id)
		return Record{Kind: KindBrokerUnregistered, NodeID: id,
			BrokerEpoch: b.Epoch + rapid.Int64Range(-1, 0).Draw(t, "unregEpoch")}
	default:
		p := rapid.Int32Range(0, 2).Draw(t, "partition")
		cur, _, _ := im.Partition(topic, p)
		var id [16]byte
		if tp := im.Topic(topic); tp != nil && rapid.IntRange(0, 9).Draw(t, "sameID") > 0 {
			id = tp.ID
		}
		return Record{Kind: KindPartitionChange, Topic: topic, TopicID: id, Partition: p,
			Unclean: rapid.Bool().Draw(t, "unclean"),
			State: drawState(t, cur.LeaderEpoch+rapid.Int32Range(0, 1).Draw(t, "le"),
				cur.PartitionEpoch+1)}
	}
}

// drawState draws a well-formed partition state over nodes 0..4 (or, rarely, a
// malformed one, which must be refused).
func drawState(t *rapid.T, leaderEpoch, partitionEpoch int32) PartitionState {
	replicas := rapid.SliceOfNDistinct(rapid.Int32Range(0, 4), 1, 3,
		rapid.ID[int32]).Draw(t, "replicas")
	isr := replicas[:rapid.IntRange(1, len(replicas)).Draw(t, "isr")]
	leader := rapid.SampledFrom(append([]int32{NoLeader}, isr...)).Draw(t, "leader")
	s := PartitionState{Replicas: replicas, ISR: isr, Leader: leader,
		LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch}
	if rapid.IntRange(0, 9).Draw(t, "adding") == 0 {
		s.Adding = replicas[len(replicas)-1:]
	}
	return s
}
