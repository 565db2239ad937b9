package meta

import (
	"testing"

	"github.com/stretchr/testify/require"
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
