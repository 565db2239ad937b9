package broker

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

func TestMetadataDescribesBrokerAndTopics(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.NodeID, c.AdvertisedHost, c.AdvertisedPort, c.ClusterID = 7, "example", 9999, "cid"
	})
	h.mustCreate("b", 2)
	h.mustCreate("a", 1)

	resp := h.metadata() // all topics
	require.Equal(t, []kmsg.MetadataResponseBroker{{NodeID: 7, Host: "example", Port: 9999}},
		resp.Brokers)
	require.Equal(t, "cid", deref(resp.ClusterID))
	require.EqualValues(t, 7, resp.ControllerID)
	require.Len(t, resp.Topics, 2)
	require.Equal(t, "a", *resp.Topics[0].Topic, "topics are sorted")
	b := resp.Topics[1]
	require.Equal(t, "b", *b.Topic)
	require.Equal(t, h.b.image.Topic("b").ID, b.TopicID)
	require.NotEqual(t, [16]byte{}, b.TopicID)
	require.EqualValues(t, -2147483648, b.AuthorizedOperations)
	require.Len(t, b.Partitions, 2)
	for i, p := range b.Partitions {
		requireCode(t, nil, p.ErrorCode)
		require.EqualValues(t, i, p.Partition)
		require.EqualValues(t, 7, p.Leader)
		require.EqualValues(t, 0, p.LeaderEpoch)
		require.Equal(t, []int32{7}, p.Replicas)
		require.Equal(t, []int32{7}, p.ISR)
		require.Empty(t, p.OfflineReplicas)
	}
}

func TestMetadataTopicSelection(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("x", 1)

	// v1+: an empty list means no topics; v0: an empty list means all topics.
	empty := kmsg.NewPtrMetadataRequest()
	empty.Version, empty.Topics = 1, []kmsg.MetadataRequestTopic{}
	require.Empty(t, h.do(empty).(*kmsg.MetadataResponse).Topics)
	empty.Version = 0
	require.Len(t, h.do(empty).(*kmsg.MetadataResponse).Topics, 1)

	// Named twice: answered once.
	resp := h.metadataAt(12, false, "x", "x")
	require.Len(t, resp.Topics, 1)

	// By topic ID (v10+), known and unknown.
	id := h.b.image.Topic("x").ID
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: id}, {TopicID: [16]byte{1}}}
	resp = h.do(req).(*kmsg.MetadataResponse)
	require.Len(t, resp.Topics, 2)
	require.Equal(t, "x", deref(resp.Topics[0].Topic))
	requireCode(t, nil, resp.Topics[0].ErrorCode)
	requireCode(t, kerr.UnknownTopicID, resp.Topics[1].ErrorCode)
	require.Nil(t, resp.Topics[1].Topic)
}

func TestMetadataUnknownAndInvalidTopics(t *testing.T) {
	tests := []struct {
		name      string
		autoCfg   bool
		allowAuto bool
		version   int16
		topic     string
		want      *kerr.Error
		created   bool
	}{
		{"auto create off", false, true, 12, "t1", kerr.UnknownTopicOrPartition, false},
		{"client disallows (v4+)", true, false, 12, "t1", kerr.UnknownTopicOrPartition, false},
		{"v3 always allows", true, false, 3, "t1", nil, true},
		{"v0 always allows", true, false, 0, "t1", nil, true},
		{"allowed", true, true, 12, "t1", nil, true},
		{"invalid name", true, true, 12, "bad/name", kerr.InvalidTopicException, false},
		{"too long", true, true, 12, strings.Repeat("a", 250), kerr.InvalidTopicException, false},
		{"dot", true, true, 12, ".", kerr.InvalidTopicException, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.AutoCreateTopics = tc.autoCfg })
			resp := h.metadataAt(tc.version, tc.allowAuto, tc.topic)
			require.Len(t, resp.Topics, 1)
			mt := resp.Topics[0]
			requireCode(t, tc.want, mt.ErrorCode)
			require.Equal(t, tc.topic, deref(mt.Topic))
			require.Equal(t, tc.created, h.b.image.Topic(tc.topic) != nil)
			if tc.created {
				require.Len(t, mt.Partitions, 3, "num.partitions default")
				require.True(t, h.hosted(tc.topic, 2))
			} else {
				require.Empty(t, mt.Partitions)
				require.Empty(t, h.env.committed)
			}
		})
	}
}

func TestMetadataAutoCreateUsesBrokerDefaults(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.NumPartitions = 5 })
	resp := h.metadataAt(12, true, "auto", "known")
	requireCode(t, nil, resp.Topics[0].ErrorCode)
	require.Len(t, resp.Topics[0].Partitions, 5)
	require.EqualValues(t, 1, h.b.image.Topic("auto").ReplicationFactor)

	// A replication factor the cluster cannot satisfy fails the creation.
	h2 := newHarness(t, func(c *Config) { c.DefaultReplicationFactor = 3 })
	mt := h2.metadataAt(12, true, "auto").Topics[0]
	requireCode(t, kerr.InvalidReplicationFactor, mt.ErrorCode)
	require.Nil(t, h2.b.image.Topic("auto"))

	// Names that collide once '.' and '_' are alike are not both created.
	h3 := newHarness(t)
	resp = h3.metadataAt(12, true, "a.b", "a_b")
	requireCode(t, nil, resp.Topics[0].ErrorCode)
	requireCode(t, kerr.InvalidTopicException, resp.Topics[1].ErrorCode)
}

func TestMetadataAutoCreateCommitFailure(t *testing.T) {
	h := newHarness(t)
	h.env.metaErr = errors.New("disk full")
	mt := h.metadataAt(12, true, "t").Topics[0]
	requireCode(t, kerr.RequestTimedOut, mt.ErrorCode)
	require.Nil(t, h.b.image.Topic("t"))

	h.env.metaErr = nil
	mt = h.metadataAt(12, true, "t").Topics[0]
	requireCode(t, nil, mt.ErrorCode, "a retry succeeds")
}

func TestMetadataOfflinePartition(t *testing.T) {
	h := newHarness(t)
	h.env.openErr = func(tp core.TopicPartition) error {
		if tp.Partition == 1 {
			return errors.New("disk on fire")
		}
		return nil
	}
	// The create is not a success: a partition it made is not served (partition_limit.go).
	requireCode(t, kerr.KafkaStorageError, h.createTopics(ctTopic("t", 2, -1)).Topics[0].ErrorCode)
	ps := h.topicMeta("t").Partitions
	requireCode(t, nil, ps[0].ErrorCode)
	requireCode(t, kerr.KafkaStorageError, ps[1].ErrorCode)
	require.EqualValues(t, -1, ps[1].Leader)
	require.Equal(t, []int32{1}, ps[1].OfflineReplicas)
}

func TestMetadataEveryVersion(t *testing.T) {
	// Auto-creation off: before v4 every Metadata request would create "missing".
	h := newHarness(t, func(c *Config) { c.AutoCreateTopics = false })
	h.mustCreate("t", 2)
	id := h.b.image.Topic("t").ID
	for _, v := range versions(kmsg.Metadata) {
		resp := h.metadataAt(v, false, "t", "missing")
		require.Len(t, resp.Topics, 2, "v%d", v)
		require.Len(t, resp.Brokers, 1, "v%d", v)
		mt := resp.Topics[0]
		requireCode(t, nil, mt.ErrorCode, "v%d", v)
		require.Len(t, mt.Partitions, 2, "v%d", v)
		require.EqualValues(t, 1, mt.Partitions[1].Leader, "v%d", v)
		requireCode(t, kerr.UnknownTopicOrPartition, resp.Topics[1].ErrorCode, "v%d", v)
		if v >= 1 {
			require.EqualValues(t, 1, resp.ControllerID, "v%d", v)
		}
		if v >= 2 {
			require.Equal(t, "sluice-dev-cluster", deref(resp.ClusterID), "v%d", v)
		}
		if v >= 10 {
			require.Equal(t, id, mt.TopicID, "v%d", v)
		}
	}
}
