package runtime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/batch"
	"github.com/sluicemq/sluice/core/broker"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
	kafkanet "github.com/sluicemq/sluice/net"
)

// peerRoundTrip sends one request through the inter-broker client and waits for it.
func peerRoundTrip(t *testing.T, p *kafkanet.Peers, ch chan broker.PeerReply, id uint64,
	msg kmsg.Request) kmsg.Response {
	t.Helper()
	p.Send(broker.PeerRequest{Node: 2, ID: id, Msg: msg, TimeoutMs: 5000})
	r := waitReply(t, ch)
	require.NoError(t, r.Err)
	require.Equal(t, id, r.ID)
	return r.Msg
}

// The requests the follower fetcher sends (core/broker/fetcher.go) travel over the
// inter-broker client to a real node at the versions it negotiates: OffsetForLeaderEpoch
// and ListOffsets with a ReplicaID, and a sessionless Fetch with a ReplicaID and
// LastFetchedEpoch (v12), whose records a follower replica takes as they are; then the
// Fetches of a follower's incremental session.
func TestFollowerRequestsReachARealNode(t *testing.T) {
	b := startPeerNode(t, 2, nil, zap.NewNop())
	ch := make(chan broker.PeerReply, 8)
	p := kafkanet.NewPeers(kafkanet.PeerOptions{}, collect(ch))
	defer p.Close()
	p.SetAddr(2, b.Addr())
	peerRoundTrip(t, p, ch, 1, createTopic1("rf"))
	for i, v := range []string{"a", "b", "c"} {
		prod := kmsg.NewPtrProduceRequest()
		prod.Acks, prod.TimeoutMillis = -1, 5000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = "rf"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = batch.Build([]batch.KV{{Value: []byte(v)}}, batch.NoProducer,
			time.Now().UnixMilli())
		pt.Partitions = append(pt.Partitions, pp)
		prod.Topics = append(prod.Topics, pt)
		resp := peerRoundTrip(t, p, ch, uint64(10+i), prod).(*kmsg.ProduceResponse)
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
	}

	ofe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofe.ReplicaID = 1
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "rf"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.CurrentLeaderEpoch, op.LeaderEpoch = 0, 0
	ot.Partitions = append(ot.Partitions, op)
	ofe.Topics = append(ofe.Topics, ot)
	er := peerRoundTrip(t, p, ch, 20, ofe).(*kmsg.OffsetForLeaderEpochResponse)
	require.EqualValues(t, 4, er.GetVersion())
	ep := er.Topics[0].Partitions[0]
	require.Zero(t, ep.ErrorCode)
	require.EqualValues(t, 0, ep.LeaderEpoch)
	require.EqualValues(t, 3, ep.EndOffset)

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = 1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "rf"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp, lp.CurrentLeaderEpoch = -1, 0
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	lr := peerRoundTrip(t, p, ch, 21, lo).(*kmsg.ListOffsetsResponse)
	require.Zero(t, lr.Topics[0].Partitions[0].ErrorCode)
	require.EqualValues(t, 3, lr.Topics[0].Partitions[0].Offset)

	f := kmsg.NewPtrFetchRequest()
	f.ReplicaID, f.MaxWaitMillis, f.MinBytes, f.MaxBytes = 1, 500, 1, 10<<20
	f.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "rf"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.CurrentLeaderEpoch, fp.FetchOffset, fp.LastFetchedEpoch = 0, 0, -1
	fp.LogStartOffset, fp.PartitionMaxBytes = 0, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	fr := peerRoundTrip(t, p, ch, 22, f).(*kmsg.FetchResponse)
	require.EqualValues(t, 12, fr.GetVersion(), "the version the fetcher's fields need")
	part := fr.Topics[0].Partitions[0]
	require.Zero(t, part.ErrorCode)
	require.EqualValues(t, 3, part.HighWatermark)
	require.EqualValues(t, -1, part.DivergingEpoch.Epoch)

	tp := core.TopicPartition{Topic: "rf", Partition: 0}
	cfg := replica.Config{Segment: replica.SegmentConfig{SegmentBytes: 1 << 20,
		SegmentMs: 1 << 40, IndexInterval: 4096}, FlushAlways: true, MaxMessageBytes: 1 << 20,
		MinInsyncReplicas: 1, TimestampBeforeMaxMs: 1 << 50, TimestampAfterMaxMs: 1 << 50}
	follower, err := replica.New(tp, 1, replicatest.NewMemLog(cfg.Segment), cfg,
		zaptest.NewLogger(t))
	require.NoError(t, err)
	follower.BecomeFollower(0)
	n, err := follower.AppendReplicated(time.Now().UnixMilli(), part.RecordBatches)
	require.NoError(t, err)
	require.Len(t, part.RecordBatches, n)
	require.EqualValues(t, 3, follower.EndOffset(), "the follower holds the leader's records")

	// The fetcher's session (fetcher_session.go): a full Fetch at epoch 0 opens one, an
	// incremental Fetch naming nothing is served over the session's partitions.
	f.SessionID, f.SessionEpoch, f.MaxWaitMillis = 0, 0, 0
	f.Topics[0].Partitions[0].FetchOffset = 3
	fr = peerRoundTrip(t, p, ch, 23, f).(*kmsg.FetchResponse)
	require.Zero(t, fr.ErrorCode)
	require.NotZero(t, fr.SessionID, "a session for the follower")
	inc := kmsg.NewPtrFetchRequest()
	inc.ReplicaID, inc.MaxBytes = 1, 10<<20
	inc.SessionID, inc.SessionEpoch = fr.SessionID, 1
	ir := peerRoundTrip(t, p, ch, 24, inc).(*kmsg.FetchResponse)
	require.Zero(t, ir.ErrorCode)
	require.Equal(t, fr.SessionID, ir.SessionID)
	require.Empty(t, ir.Topics, "nothing new since the full fetch")
}
