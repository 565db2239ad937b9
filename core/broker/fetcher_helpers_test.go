package broker

// Helpers for the follower fetcher's tests: a leader node simulated with real replicas
// (replica.Replica over MemLogs) that answers the follower broker's SendPeer requests
// as the leader side of replication does (CheckFollowerFetch, FollowerFetched,
// ReadForFollower, EndOffsetForEpoch), delivered back to the harness as PeerReplies.
// Requests and responses pass through the kmsg codec at the broker's highest version,
// as the inter-broker client would send them.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/replica"
	"github.com/sluicemq/sluice/core/replica/replicatest"
)

// testLeader is one simulated leader node.
type testLeader struct {
	t    testing.TB
	id   int32
	cfg  replica.Config
	reps map[core.TopicPartition]*replica.Replica
	logs map[core.TopicPartition]*replicatest.MemLog
	inc  uint64
	// rewrite, when set, may change a Fetch response before it is sent.
	rewrite func(resp *kmsg.FetchResponse)
	// sessions: the leader grants incremental fetch sessions (fetcher_session_test.go);
	// otherwise every answer says SessionID 0 (no session) and the follower fetches in
	// full.
	sessions *testSessions
	// fetches records every Fetch as received (before a session's expansion).
	fetches []*kmsg.FetchRequest
}

func newTestLeader(t testing.TB, id int32, cfg replica.Config) *testLeader {
	return &testLeader{t: t, id: id, cfg: cfg, reps: map[core.TopicPartition]*replica.Replica{},
		logs: map[core.TopicPartition]*replicatest.MemLog{}}
}

// lead makes the leader host tp, leading in epoch with the given followers in its ISR,
// from a copy of the batches given (a log it replicated earlier).
func (l *testLeader) lead(tp core.TopicPartition, epoch int32, batches [][]byte,
	isr ...int32) *replica.Replica {
	l.t.Helper()
	log := replicatest.NewMemLog(l.cfg.Segment)
	l.inc++
	rep, err := replica.New(tp, l.inc, log, l.cfg, zaptest.NewLogger(l.t))
	require.NoError(l.t, err)
	rep.BecomeFollower(0)
	for _, b := range batches {
		_, err := rep.AppendReplicated(0, append([]byte(nil), b...))
		require.NoError(l.t, err)
	}
	syncReplica(rep)
	require.NoError(l.t, rep.BecomeLeader(epoch))
	rep.SetISR(isr)
	l.reps[tp], l.logs[tp] = rep, log
	return rep
}

// produce appends batches as the leader (offsets and epoch assigned) and syncs them.
func (l *testLeader) produce(tp core.TopicPartition, batches ...[]byte) {
	l.t.Helper()
	rep := l.reps[tp]
	for _, b := range batches {
		res := rep.Append(1_000, append([]byte(nil), b...))
		require.Zero(l.t, res.Err)
	}
	syncReplica(rep)
}

func syncReplica(rep *replica.Replica) {
	if rep.NeedsSync() {
		rep.BeginSync()
		rep.SyncCompleted(rep.Log().Sync())
	}
}

// answer serves one peer request as the leader node would.
func (l *testLeader) answer(p PeerRequest) kmsg.Response {
	l.t.Helper()
	p.Msg.SetVersion(maxVersion(kmsg.Key(p.Msg.Key())))
	var resp kmsg.Response
	switch m := roundTripRequest(l.t, p.Msg).(type) {
	case *kmsg.FetchRequest:
		l.fetches = append(l.fetches, m)
		fr := l.sessionFetch(m)
		if l.rewrite != nil {
			l.rewrite(fr)
		}
		resp = fr
	case *kmsg.OffsetForLeaderEpochRequest:
		resp = l.epochs(m)
	case *kmsg.ListOffsetsRequest:
		resp = l.listOffsets(m)
	default:
		l.t.Fatalf("the fetcher sent %T", p.Msg)
	}
	resp.SetVersion(p.Msg.GetVersion())
	return roundTripResponse(l.t, resp)
}

func (l *testLeader) fetch(m *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := m.ResponseKind().(*kmsg.FetchResponse)
	for _, t := range m.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			l.fetchOne(m.ReplicaID, core.TopicPartition{Topic: t.Topic, Partition: p.Partition},
				p, &rp)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (l *testLeader) fetchOne(follower int32, tp core.TopicPartition,
	p kmsg.FetchRequestTopicPartition, rp *kmsg.FetchResponseTopicPartition) {
	rep := l.reps[tp]
	if rep == nil { // as the real leader: it does not host the partition (yet)
		rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return
	}
	f := replica.FollowerFetch{Replica: follower, FetchOffset: p.FetchOffset,
		LastFetchedEpoch: p.LastFetchedEpoch, CurrentLeaderEpoch: p.CurrentLeaderEpoch}
	chk := rep.CheckFollowerFetch(f)
	switch {
	case chk.Code != 0:
		// As the real leader: the high-water mark and log start come with the error.
		rp.ErrorCode = chk.Code
		rp.HighWatermark, rp.LogStartOffset = rep.HighWatermark(), rep.StartOffset()
		return
	case chk.Diverging:
		rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = chk.DivergingEpoch,
			chk.DivergingEndOffset
		rp.HighWatermark, rp.LogStartOffset = rep.HighWatermark(), rep.StartOffset()
		return
	}
	rep.FollowerFetched(f)
	res := rep.ReadForFollower(p.FetchOffset, int(p.PartitionMaxBytes))
	rp.ErrorCode, rp.HighWatermark, rp.LogStartOffset = res.Err, res.HighWatermark,
		res.StartOffset
	rp.RecordBatches = res.Records
}

func (l *testLeader) epochs(m *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range m.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.EndOffset = p.Partition, -1, -1
			rep := l.reps[core.TopicPartition{Topic: t.Topic, Partition: p.Partition}]
			switch {
			case rep == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rep.Follower():
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p.CurrentLeaderEpoch >= 0 && p.CurrentLeaderEpoch < rep.LeaderEpoch():
				rp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case p.CurrentLeaderEpoch > rep.LeaderEpoch():
				rp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			default:
				rp.LeaderEpoch, rp.EndOffset = rep.EndOffsetForEpoch(p.LeaderEpoch)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (l *testLeader) listOffsets(m *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range m.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rep := l.reps[core.TopicPartition{Topic: t.Topic, Partition: p.Partition}]
			switch {
			case rep == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rep.Follower():
				rp.ErrorCode = kerr.NotLeaderForPartition.Code
			case p.Timestamp == -2:
				rp.Offset = rep.StartOffset()
			default:
				rp.Offset = rep.EndOffset()
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// takePeer removes and returns the follower's queued peer requests.
func (h *harness) takePeer() []PeerRequest {
	ps := h.env.peerReqs
	h.env.peerReqs = nil
	return ps
}

// serve answers every queued peer request with the leader of its node (leaders by
// node id) and settles; it returns how many it answered.
func (h *harness) serve(leaders map[int32]*testLeader) int {
	h.t.Helper()
	ps := h.takePeer()
	for _, p := range ps {
		l := leaders[p.Node]
		require.NotNil(h.t, l, "request to node %d, which no test leader plays", p.Node)
		h.step(PeerReply{Node: p.Node, ID: p.ID, Msg: l.answer(p)})
	}
	h.settle()
	return len(ps)
}

// catchUp serves the follower until its log and high-water mark for tp equal the
// leader's, at most rounds rounds; the fetch it then sends stays queued.
func (h *harness) catchUp(l *testLeader, tp core.TopicPartition, rounds int) {
	h.t.Helper()
	h.catchUpWith(map[int32]*testLeader{l.id: l}, l, tp, rounds)
}

// catchUpWith is catchUp with other leaders answering requests sent to them earlier.
func (h *harness) catchUpWith(leaders map[int32]*testLeader, l *testLeader,
	tp core.TopicPartition, rounds int) {
	h.t.Helper()
	for range rounds {
		rep, lead := h.b.replicas[tp], l.reps[tp]
		end := lead.EndOffset()
		if rep.EndOffset() == end && rep.HighWatermark() == end && lead.HighWatermark() == end &&
			len(h.env.peerReqs) > 0 {
			return
		}
		if h.serve(leaders) == 0 {
			h.advance(time.Duration(h.cfg.Fetcher.BackoffMs) * time.Millisecond)
		}
	}
	h.t.Fatalf("follower did not catch up in %d rounds: end %d hwm %d, leader end %d hwm %d",
		rounds, h.b.replicas[tp].EndOffset(), h.b.replicas[tp].HighWatermark(),
		l.reps[tp].EndOffset(), l.reps[tp].HighWatermark())
}

// followerBatches is the follower's log for tp, batch by batch.
func (h *harness) followerBatches(tp core.TopicPartition) [][]byte {
	return h.env.logs[tp].Batches()
}

// onePeer returns the one queued peer request, decoded as the leader would see it.
func (h *harness) onePeer() (PeerRequest, kmsg.Request) {
	h.t.Helper()
	require.Len(h.t, h.env.peerReqs, 1, "one request in flight per leader")
	p := h.env.peerReqs[0]
	p.Msg.SetVersion(maxVersion(kmsg.Key(p.Msg.Key())))
	return p, roundTripRequest(h.t, p.Msg)
}
