package meta

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func assigned(replicas ...int32) PartitionState {
	return PartitionState{Replicas: replicas, ISR: replicas, Leader: replicas[0]}
}

// TestOldRecordsEncodeAndDecodeAsBefore pins the on-disk format: a record of a kind that
// existed before replica placement encodes without any of the new fields, and a record
// written by an older Sluice decodes into an unassigned topic.
func TestOldRecordsEncodeAndDecodeAsBefore(t *testing.T) {
	b, err := json.Marshal(Record{Kind: KindPartitionsAdded, Topic: "a", Partitions: 3})
	require.NoError(t, err)
	require.JSONEq(t, `{"kind":2,"topic":"a","topic_id":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],
		"partitions":3}`, string(b))
	old := `{"kind":1,"topic":"t","topic_id":[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,2],
		"partitions":2,"replication_factor":1,"configs":[{"name":"retention.ms","value":"5"}]}`
	var r Record
	require.NoError(t, json.Unmarshal([]byte(old), &r))
	im := NewImage()
	require.NoError(t, im.Apply(r))
	_, isAssigned, ok := im.Partition("t", 1)
	require.True(t, ok)
	require.False(t, isAssigned, "an old topic is unassigned: it lives on its node")
	require.Nil(t, im.Topic("t").States)
}

func TestPartitionChangeIsConditional(t *testing.T) {
	im := NewImage()
	require.NoError(t, im.Apply(Record{Kind: KindTopicCreated, Topic: "t", Partitions: 1,
		PartitionStates: []PartitionState{assigned(1, 2, 3)}}))
	change := func(s PartitionState, unclean bool) error {
		return im.Apply(Record{Kind: KindPartitionChange, Topic: "t", State: s,
			Unclean: unclean})
	}
	// Leader 2 from the ISR: leader epoch and partition epoch each one more.
	next := PartitionState{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: 2,
		LeaderEpoch: 1, PartitionEpoch: 1}
	require.NoError(t, change(next, false))
	require.Error(t, change(next, false), "the same change twice: old partition epoch")
	bad := next.Clone()
	bad.PartitionEpoch, bad.ISR = 2, []int32{2}
	bad.LeaderEpoch = 2
	require.Error(t, change(bad, false), "leader epoch moved without a leader change")
	bad.Leader = 1
	bad.ISR = []int32{1}
	require.Error(t, change(bad, false), "1 is not in the ISR [2 3]: not a clean election")
	require.NoError(t, change(bad, true), "the same, flagged unclean")
	empty := PartitionState{Replicas: []int32{1, 2, 3}, Leader: NoLeader, LeaderEpoch: 3,
		PartitionEpoch: 3}
	require.Error(t, change(empty, false), "the ISR is never empty")
	notIn := PartitionState{Replicas: []int32{1, 2, 3}, ISR: []int32{3}, Leader: 1,
		LeaderEpoch: 2, PartitionEpoch: 3}
	require.Error(t, change(notIn, true), "the leader is in its own ISR, even unclean")
	s, ok1, ok2 := im.Partition("t", 0)
	require.True(t, ok1 && ok2)
	require.Equal(t, int32(1), s.Leader)
	require.Equal(t, int32(2), s.LeaderEpoch)
}

func TestBrokerRecordsAreConditional(t *testing.T) {
	im := NewImage()
	reg := Record{Kind: KindBrokerRegistered, NodeID: 1, Incarnation: [16]byte{1},
		BrokerEpoch: 1, Host: "h", Port: 9092}
	require.NoError(t, im.Apply(reg))
	require.Error(t, im.Apply(reg), "epoch 1 again")
	b, ok := im.Broker(1)
	require.True(t, ok)
	require.Equal(t, BrokerFenced, b.State, "a registration starts fenced")
	unfence := Record{Kind: KindBrokerChange, NodeID: 1, BrokerEpoch: 1,
		BrokerState: BrokerUnfenced}
	require.NoError(t, im.Apply(unfence))
	require.Error(t, im.Apply(unfence), "no change")
	reg.BrokerEpoch, reg.Incarnation = 2, [16]byte{2}
	require.NoError(t, im.Apply(reg), "a new incarnation replaces the old one")
	unfence.BrokerState = BrokerFenced
	require.Error(t, im.Apply(unfence), "a change for the old registration")
	require.NoError(t, im.Apply(Record{Kind: KindClusterCreated, ClusterID: "c"}))
	require.Error(t, im.Apply(Record{Kind: KindClusterCreated, ClusterID: "d"}))
	require.Equal(t, "c", im.ClusterID())
}

func TestPartitionsAddedKeepsTheTopicsAssignment(t *testing.T) {
	im := NewImage()
	require.NoError(t, im.Apply(Record{Kind: KindTopicCreated, Topic: "u", Partitions: 1}))
	require.Error(t, im.Apply(Record{Kind: KindPartitionsAdded, Topic: "u", Partitions: 2,
		PartitionStates: []PartitionState{assigned(1)}}))
	require.NoError(t, im.Apply(Record{Kind: KindTopicCreated, Topic: "a", Partitions: 1,
		PartitionStates: []PartitionState{assigned(1)}}))
	require.Error(t, im.Apply(Record{Kind: KindPartitionsAdded, Topic: "a", Partitions: 2}))
	require.Error(t, im.Apply(Record{Kind: KindPartitionsAdded, Topic: "a", Partitions: 3,
		PartitionStates: []PartitionState{assigned(2)}}), "one state per new partition")
	require.NoError(t, im.Apply(Record{Kind: KindPartitionsAdded, Topic: "a", Partitions: 2,
		PartitionStates: []PartitionState{assigned(2)}}))
	s, _, _ := im.Partition("a", 1)
	require.Equal(t, []int32{2}, s.Replicas)
}

func TestPartitionChangeForAnEarlierTopicOfTheNameIsRefused(t *testing.T) {
	im := NewImage()
	create := Record{Kind: KindTopicCreated, Topic: "t", TopicID: [16]byte{1}, Partitions: 1,
		PartitionStates: []PartitionState{assigned(1, 2)}}
	require.NoError(t, im.Apply(create))
	change := Record{Kind: KindPartitionChange, Topic: "t", TopicID: [16]byte{1},
		State: PartitionState{Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: 2,
			LeaderEpoch: 1, PartitionEpoch: 1}}
	require.NoError(t, im.Apply(Record{Kind: KindTopicDeleted, Topic: "t"}))
	create.TopicID = [16]byte{2}
	require.NoError(t, im.Apply(create))
	require.Error(t, im.Apply(change), "decided for the deleted topic")
	change.TopicID = [16]byte{2}
	require.NoError(t, im.Apply(change))
}

// An unregistration removes a fenced broker that hosts no replica, for its current
// epoch only; the next registration still needs an epoch greater than the removed
// one's, also in an image rebuilt from a snapshot.
func TestBrokerUnregistered(t *testing.T) {
	im := NewImage()
	reg := func(id int32, epoch int64) Record {
		return Record{Kind: KindBrokerRegistered, NodeID: id, BrokerEpoch: epoch, Host: "h",
			Port: 1}
	}
	require.NoError(t, im.Apply(reg(1, 1)))
	require.NoError(t, im.Apply(reg(4, 2)))
	require.NoError(t, im.Apply(Record{Kind: KindTopicCreated, Topic: "t", Partitions: 1,
		ReplicationFactor: 1, PartitionStates: []PartitionState{{Replicas: []int32{4},
			ISR: []int32{4}, Leader: 4}}}))
	unreg := Record{Kind: KindBrokerUnregistered, NodeID: 4, BrokerEpoch: 2}
	require.ErrorContains(t, im.Apply(unreg), "still hosts 1 replicas (t-0)")
	require.NoError(t, im.Apply(Record{Kind: KindTopicDeleted, Topic: "t"}))
	require.NoError(t, im.Apply(Record{Kind: KindBrokerChange, NodeID: 4, BrokerEpoch: 2,
		BrokerState: BrokerUnfenced}))
	require.ErrorContains(t, im.Apply(unreg), "not fenced")
	require.NoError(t, im.Apply(Record{Kind: KindBrokerChange, NodeID: 4, BrokerEpoch: 2,
		BrokerState: BrokerFenced}))
	require.ErrorContains(t, im.Apply(Record{Kind: KindBrokerUnregistered, NodeID: 4,
		BrokerEpoch: 1}), "epoch 1")
	require.NoError(t, im.Apply(unreg))
	_, ok := im.Broker(4)
	require.False(t, ok)
	require.ErrorContains(t, im.Apply(unreg), "not registered")

	again := NewImage()
	for _, r := range im.Snapshot() {
		require.NoError(t, again.Apply(r))
	}
	require.True(t, im.Equal(again))
	require.Equal(t, int64(2), again.MaxBrokerEpoch())
	_, ok = again.Broker(4)
	require.False(t, ok)
	require.Error(t, again.Apply(reg(4, 2)), "an epoch not beyond the removed one's")
	require.NoError(t, again.Apply(reg(4, 3)))
	require.Equal(t, KindBrokerUnregistered.String(), "BrokerUnregistered")
}
