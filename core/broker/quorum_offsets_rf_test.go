package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicemq/sluice/core/group"
	"github.com/sluicemq/sluice/core/meta"
)

// The offsets topic gets offsets.topic.replication.factor replicas capped to the
// brokers the cluster registered, and is created only once that many are live. The
// simulator (--set nodes=3) found the topic created with one replica when the first
// group request came while the other two brokers were registered but still fenced: with
// min.insync.replicas=2 no group could commit again (mutant
// broker/offsets-rf-live-brokers restores that cap).
func TestQuorumOffsetsTopicWaitsForItsRegisteredBrokers(t *testing.T) {
	q := newQuorumHarness(t, 1, 1, groupOpts)
	q.register(2, meta.BrokerFenced)
	q.register(3, meta.BrokerFenced)
	q.mustCreateRF("t", 1, 1)
	for range 2 {
		codes := commitCodes(q.do(commitReq("g", -1, "", "t", int32(0), int64(5))))
		require.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code}, codes)
		q.settle()
		require.Nil(t, q.b.image.Topic(group.OffsetsTopic),
			"created while only one of its three registered brokers is live")
	}
	for _, id := range []int32{2, 3} {
		q.commitMeta(meta.Record{Kind: meta.KindBrokerChange, NodeID: id,
			BrokerEpoch: q.epoch[id], BrokerState: meta.BrokerUnfenced})
	}
	q.settle()
	codes := commitCodes(q.do(commitReq("g", -1, "", "t", int32(0), int64(5))))
	require.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code}, codes, "being created")
	q.settle()
	requirePlaced(t, q.states(group.OffsetsTopic), int(q.cfg.Groups.OffsetsPartitions), 3,
		1, 2, 3)
}

// A cluster of two registered brokers gets an offsets topic of two replicas (the
// default factor of three capped to the cluster), created once both are live.
func TestQuorumOffsetsTopicOfASmallCluster(t *testing.T) {
	q := newQuorumHarness(t, 1, 2, groupOpts)
	q.mustCreateRF("t", 1, 1)
	codes := commitCodes(q.do(commitReq("g", -1, "", "t", int32(0), int64(5))))
	require.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code}, codes)
	q.settle()
	requirePlaced(t, q.states(group.OffsetsTopic), int(q.cfg.Groups.OffsetsPartitions), 2,
		1, 2)
}

// At a cluster's first start the brokers register one by one: a group request that
// comes while only the first has registered must not create the offsets topic with one
// replica when the quorum has three nodes (each a broker). The simulator's --set
// nodes=5 and nodes=3 seed 65 found it: the topic got one replica and, with
// min.insync.replicas=2, no group ever settled.
func TestQuorumOffsetsTopicCountsTheQuorumsNodes(t *testing.T) {
	q := newQuorumHarness(t, 1, 1, groupOpts)
	q.brokerOpts = append(q.brokerOpts, WithQuorumSize(3))
	q.restart()
	q.mustCreateRF("t", 1, 1)
	for range 2 {
		codes := commitCodes(q.do(commitReq("g", -1, "", "t", int32(0), int64(5))))
		require.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code}, codes)
		q.settle()
		require.Nil(t, q.b.image.Topic(group.OffsetsTopic),
			"created while one of the quorum's three nodes has registered")
	}
	for _, id := range []int32{2, 3} {
		q.register(id, meta.BrokerUnfenced)
	}
	q.settle()
	codes := commitCodes(q.do(commitReq("g", -1, "", "t", int32(0), int64(5))))
	require.Equal(t, []int16{kerr.CoordinatorNotAvailable.Code}, codes, "being created")
	q.settle()
	requirePlaced(t, q.states(group.OffsetsTopic), int(q.cfg.Groups.OffsetsPartitions), 3,
		1, 2, 3)
}
