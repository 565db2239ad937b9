package broker

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// testSessions is a test leader's fetch session cache (KIP-227, as fetch_session.go
// serves it, without bounds): sessions by id, each holding its partitions' request
// fields and what the follower was last told of each.
type testSessions struct {
	next     int32
	byID     map[int32]*testSession
	notFound int // incremental fetches of a session it no longer has
}

type testSession struct {
	epoch int32
	parts map[core.TopicPartition]kmsg.FetchRequestTopicPartition
	told  map[core.TopicPartition][2]int64 // high-water mark, log start
}

func newTestSessions() *testSessions {
	return &testSessions{next: 100, byID: map[int32]*testSession{}}
}

// evict drops every session, as a leader restart or a full cache would.
func (ss *testSessions) evict() { ss.byID = map[int32]*testSession{} }

// sessionFetch serves m as the leader's session cache would, or sessionless when the
// leader grants no sessions.
func (l *testLeader) sessionFetch(m *kmsg.FetchRequest) *kmsg.FetchResponse {
	ss := l.sessions
	if ss == nil || m.SessionEpoch < 0 {
		return l.fetch(m)
	}
	if m.SessionEpoch == 0 {
		delete(ss.byID, m.SessionID)
		ss.next++
		s := &testSession{epoch: 1, parts: map[core.TopicPartition]kmsg.FetchRequestTopicPartition{},
			told: map[core.TopicPartition][2]int64{}}
		ss.byID[ss.next] = s
		s.apply(m)
		resp := l.fetch(m)
		resp.SessionID = ss.next
		s.note(resp, false)
		return resp
	}
	s := ss.byID[m.SessionID]
	switch {
	case s == nil:
		ss.notFound++
		resp := m.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp
	case s.epoch != m.SessionEpoch:
		resp := m.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
		return resp
	}
	s.epoch++
	s.apply(m)
	full := *m
	full.Topics, full.ForgottenTopics = nil, nil
	tps := make([]core.TopicPartition, 0, len(s.parts))
	for tp := range s.parts {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool { return tps[i].Less(tps[j]) })
	for _, tp := range tps {
		addFetchPartition(&full, tp.Topic, s.parts[tp])
	}
	resp := l.fetch(&full)
	resp.SessionID = m.SessionID
	s.note(resp, true)
	return resp
}

func (s *testSession) apply(m *kmsg.FetchRequest) {
	for _, f := range m.ForgottenTopics {
		for _, p := range f.Partitions {
			tp := core.TopicPartition{Topic: f.Topic, Partition: p}
			delete(s.parts, tp)
			delete(s.told, tp)
		}
	}
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			s.parts[core.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p
		}
	}
}

// note records what the answer tells; an incremental answer keeps only the news.
func (s *testSession) note(resp *kmsg.FetchResponse, incremental bool) {
	for i := range resp.Topics {
		t := &resp.Topics[i]
		kept := t.Partitions[:0]
		for _, p := range t.Partitions {
			tp := core.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			told, ok := s.told[tp]
			now := [2]int64{p.HighWatermark, p.LogStartOffset}
			news := !ok || told != now || len(p.RecordBatches) > 0 || p.ErrorCode != 0 ||
				p.DivergingEpoch.Epoch >= 0
			if p.ErrorCode != 0 {
				delete(s.told, tp)
			} else {
				s.told[tp] = now
			}
			if news || !incremental {
				kept = append(kept, p)
			}
		}
		t.Partitions = kept
	}
}

// fetchedParts lists the partitions a Fetch names, and those it forgets.
func fetchedParts(m *kmsg.FetchRequest) (listed, forgotten []core.TopicPartition) {
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			listed = append(listed, core.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	for _, f := range m.ForgottenTopics {
		for _, p := range f.Partitions {
			forgotten = append(forgotten, core.TopicPartition{Topic: f.Topic, Partition: p})
		}
	}
	return listed, forgotten
}

// sessionFollower is a broker following t-0..n-1 from a test leader node 2 that grants
// sessions, every partition led in epoch 1 with one record.
func sessionFollower(t *testing.T, n int32) (*harness, *testLeader, []core.TopicPartition) {
	h := newHarness(t)
	h.mustCreate("t", n)
	l := newTestLeader(t, 2, h.b.replicaConfig(h.b.image.Topic("t")))
	l.sessions = newTestSessions()
	var tps []core.TopicPartition
	for p := range n {
		tp := tp("t", p)
		l.lead(tp, 1, nil, 1)
		l.produce(tp, values(fmt.Sprint("first-", p)))
		tps = append(tps, tp)
	}
	for _, tp := range tps {
		h.b.follow(tp, 2, 1)
	}
	return h, l, tps
}

// serveUntilEqual serves the follower until every partition's log and high-water mark
// are the leader's.
func (h *harness) serveUntilEqual(l *testLeader, tps []core.TopicPartition, rounds int) {
	h.t.Helper()
	for _, tp := range tps {
		h.catchUp(l, tp, rounds)
	}
	for _, tp := range tps {
		require.Equal(h.t, l.logs[tp].Batches(), h.followerBatches(tp), "%s", tp)
	}
}

// After its first full Fetch (epoch 0) the follower's Fetches are incremental and name
// only the partition whose fetch offset moved; a partition that backs off after an
// error is forgotten, and listed whole again once it is ready, missing nothing.
func TestFollowerSessionListsOnlyChangedPartitions(t *testing.T) {
	h, l, tps := sessionFollower(t, 3)
	p, msg := h.onePeer()
	require.EqualValues(t, 2, p.Node)
	first := msg.(*kmsg.FetchRequest)
	require.EqualValues(t, 0, first.SessionEpoch, "a full fetch opens the session")
	require.EqualValues(t, 0, first.SessionID)
	h.serveUntilEqual(l, tps, 20)
	var id int32
	for _, f := range l.fetches[1:] {
		require.Positive(t, f.SessionEpoch, "incremental after the first")
		require.NotZero(t, f.SessionID)
		id = f.SessionID
	}

	// Steady state: writes to t-1 only; every Fetch names t-1 or nothing.
	l.fetches = nil
	for i := range 3 {
		l.produce(tps[1], values(fmt.Sprint("more-", i)))
		h.serveUntilEqual(l, tps, 20)
	}
	named := 0
	for _, f := range l.fetches {
		listed, forgotten := fetchedParts(f)
		require.Equal(t, id, f.SessionID, "the same session")
		require.Empty(t, forgotten)
		for _, x := range listed {
			require.Equal(t, tps[1], x, "only the partition with writes")
			named++
		}
	}
	require.Positive(t, named, "t-1's new fetch offsets were sent")

	// The leader refuses t-2 once (NOT_LEADER_OR_FOLLOWER): it backs off and is
	// forgotten; writes to it meanwhile arrive once it is listed again.
	refused := false
	l.rewrite = func(resp *kmsg.FetchResponse) {
		if refused {
			return
		}
		refused = true
		for i := range resp.Topics { // its records are not sent
			kept := resp.Topics[i].Partitions[:0]
			for _, p := range resp.Topics[i].Partitions {
				if p.Partition != 2 {
					kept = append(kept, p)
				}
			}
			resp.Topics[i].Partitions = kept
		}
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode = 2, kerr.NotLeaderForPartition.Code
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.Partitions = "t", []kmsg.FetchResponseTopicPartition{rp}
		resp.Topics = append(resp.Topics, rt)
	}
	l.fetches = nil
	l.produce(tps[2], values("while-refused"))
	h.serve(map[int32]*testLeader{2: l}) // answered with t-2 refused
	_, msg = h.onePeer()
	listed, forgotten := fetchedParts(msg.(*kmsg.FetchRequest))
	require.Equal(t, []core.TopicPartition{tps[2]}, forgotten, "t-2 backs off: forgotten")
	require.NotContains(t, listed, tps[2])
	h.advance(backoff(h))
	h.serveUntilEqual(l, tps, 20)
	resent := false
	for _, f := range l.fetches[1:] {
		listed, _ := fetchedParts(f)
		for _, x := range listed {
			resent = resent || x == tps[2]
		}
	}
	require.True(t, resent, "t-2 listed again after its backoff")
}

// Session loss: the leader evicting the session (FETCH_SESSION_ID_NOT_FOUND), a wrong
// epoch (INVALID_FETCH_SESSION_EPOCH) and a failed request each make the next Fetch
// full (epoch 0, every partition), at once after a session error; nothing written
// meanwhile is missed.
func TestFollowerSessionLossFallsBackToAFullFetch(t *testing.T) {
	h, l, tps := sessionFollower(t, 3)
	h.serveUntilEqual(l, tps, 20)
	leaders := map[int32]*testLeader{2: l}
	requireFull := func(what string, id int32) {
		t.Helper()
		_, msg := h.onePeer()
		f := msg.(*kmsg.FetchRequest)
		require.EqualValues(t, 0, f.SessionEpoch, what)
		require.Equal(t, id, f.SessionID, what)
		listed, _ := fetchedParts(f)
		require.Equal(t, tps, listed, what)
	}

	l.sessions.evict()
	l.produce(tps[0], values("after-evict"))
	h.serve(leaders) // FETCH_SESSION_ID_NOT_FOUND
	requireFull("after the eviction: a new session, naming none", 0)
	h.serveUntilEqual(l, tps, 20)

	_, msg := h.onePeer()
	id := msg.(*kmsg.FetchRequest).SessionID
	l.sessions.byID[id].epoch += 5 // the leader expects another epoch
	l.produce(tps[1], values("after-bad-epoch"))
	h.serve(leaders) // INVALID_FETCH_SESSION_EPOCH
	requireFull("after a wrong epoch: closes the session it names", id)
	h.serveUntilEqual(l, tps, 20)

	// A transport error: the request may have reached the leader's session or not.
	_, msg = h.onePeer()
	id = msg.(*kmsg.FetchRequest).SessionID
	for _, p := range h.takePeer() {
		h.step(PeerReply{Node: p.Node, ID: p.ID, Err: fmt.Errorf("test: lost")})
	}
	h.settle()
	require.Empty(t, h.env.peerReqs, "backs off")
	l.produce(tps[2], values("after-transport-error"))
	h.advance(backoff(h))
	requireFull("after a transport error", id)
	h.serveUntilEqual(l, tps, 20)
}

// A leader that grants no session (no free slot: SessionID 0) gets full fetches, each
// asking again.
func TestFollowerWithoutASessionFetchesInFull(t *testing.T) {
	h, l, tps := sessionFollower(t, 2)
	l.sessions = nil
	h.serveUntilEqual(l, tps, 20)
	for _, f := range l.fetches {
		require.EqualValues(t, 0, f.SessionEpoch)
		require.EqualValues(t, 0, f.SessionID)
	}
}

// Issue 10: a follower of 1,000 partitions, one of them receiving writes, sends Fetches
// naming only that partition. Real brokers on both sides (the leader's session cache
// of fetch_session.go): after the first full Fetch, every Fetch of node 2 lists at most
// t-7; acks=all produces to t-7 are answered (the leader records the follower's fetch
// offsets through its session). The follower's session is privileged on the leader.
func TestFollowerOfAThousandPartitionsSendsOnlyTheChangedOne(t *testing.T) {
	c := newTestCluster(t, 1, 1, 2)
	c.handFollowers = false
	var fetches []*kmsg.FetchRequest
	c.observe = func(from int32, p PeerRequest) {
		if f, ok := p.Msg.(*kmsg.FetchRequest); ok && from == 2 {
			fetches = append(fetches, f)
		}
	}
	states := make([]meta.PartitionState, 1000)
	for i := range states {
		states[i] = pstate(ids(1, 2), ids(1, 2), 1, 0, 0)
	}
	c.commit(assignedTopicRecord("k", nil, states...))
	c.advance(2 * time.Second)
	require.NotEmpty(t, fetches)
	require.EqualValues(t, 0, fetches[0].SessionEpoch, "the first Fetch opens a session")
	// The partitions were followed one by one; the first Fetch left with the first,
	// the next one added the others to the session.
	named := map[core.TopicPartition]int{}
	for _, f := range fetches {
		listed, _ := fetchedParts(f)
		for _, x := range listed {
			named[x]++
		}
	}
	require.Len(t, named, 1000, "every partition sent")
	leader := c.nodes[1]
	require.Len(t, leader.b.sessions.byID, 1)
	for _, s := range leader.b.sessions.byID {
		require.True(t, s.privileged, "a follower's session")
		require.Len(t, s.parts, 1000)
	}

	fetches = nil
	for i := range 5 {
		id := leader.send(produceReq(-1, "k", 7, values(fmt.Sprint("v", i))))
		c.settle()
		c.advance(time.Second)
		resp, ok := leader.reply(id)
		require.True(t, ok, "acks=all answered: the follower's offset reached the leader")
		requireCode(t, nil, producePart(t, resp).ErrorCode)
	}
	sent := 0
	for _, f := range fetches {
		require.Positive(t, f.SessionEpoch, "incremental")
		listed, forgotten := fetchedParts(f)
		require.Empty(t, forgotten)
		require.LessOrEqual(t, len(listed), 1, "at most the partition with writes")
		for _, x := range listed {
			require.Equal(t, tp("k", 7), x)
			sent++
		}
	}
	require.GreaterOrEqual(t, sent, 5, "each new fetch offset of k-7 was sent")
	c.requireIdentical(1, "k", 7, 2)
	c.requireIdentical(1, "k", 0, 2)
}

// Session loss with real brokers: the leader's cache evicts the follower's session
// while its Fetch is parked (the answer is FETCH_SESSION_ID_NOT_FOUND), then the
// leader restarts (its cache is gone). Each time the follower falls back to a full
// Fetch and a new session, and misses nothing written meanwhile.
func TestFollowerSessionSurvivesEvictionAndLeaderRestart(t *testing.T) {
	c := newTestCluster(t, 1, 1, 2)
	c.handFollowers = false
	var fetches []*kmsg.FetchRequest
	c.observe = func(from int32, p PeerRequest) {
		if f, ok := p.Msg.(*kmsg.FetchRequest); ok && from == 2 {
			fetches = append(fetches, f)
		}
	}
	states := make([]meta.PartitionState, 20)
	for i := range states {
		states[i] = pstate(ids(1, 2), ids(1, 2), 1, 0, 0)
	}
	c.commit(assignedTopicRecord("k", nil, states...))
	c.advance(2 * time.Second)
	leader := c.nodes[1]
	produce := func(part int32, v string) {
		t.Helper()
		requireCode(t, nil, producePart(t, c.do(leader, produceReq(1, "k", part,
			values(v)))).ErrorCode)
	}
	requireAll := func() {
		t.Helper()
		for p := range int32(20) {
			c.requireIdentical(1, "k", p, 2)
		}
	}
	fullFetches := func() int {
		n := 0
		for _, f := range fetches {
			if f.SessionEpoch == 0 {
				listed, _ := fetchedParts(f)
				require.Len(t, listed, 20)
				n++
			}
		}
		return n
	}
	produce(3, "a")
	c.advance(2 * time.Second)
	requireAll()

	fetches = nil
	for _, s := range sortedSessions(leader.b.sessions.byID) {
		leader.b.closeSession(s.id)
	}
	produce(4, "b")
	c.advance(2 * time.Second)
	require.Equal(t, 1, fullFetches(), "one full fetch after the eviction")
	require.Len(t, leader.b.sessions.byID, 1, "a new session")
	requireAll()

	fetches = nil
	c.kill(1)
	c.restart(1)
	leader = c.nodes[1]
	c.advance(3 * time.Second)
	produce(5, "c")
	c.advance(3 * time.Second)
	require.Equal(t, 1, fullFetches(), "one full fetch after the restart")
	require.Len(t, leader.b.sessions.byID, 1)
	requireAll()
}

func sortedSessions(m map[int32]*fetchSession) []*fetchSession {
	out := make([]*fetchSession, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// A link waiting for a partition's fsync before its next Fetch (F2) is woken when that
// partition stops being followed from it (it moved to another leader): the link's other
// partitions are fetched again. Found by TestFollowerInSessionsConvergesOnTheLeadersLogs;
// sessionless fetching had the same hole.
func TestLinkWaitingOnAMovedPartitionsSyncFetchesAgain(t *testing.T) {
	h, l, tps := sessionFollower(t, 2)
	h.serveUntilEqual(l, tps, 20)
	l.produce(tps[0], values("x"))
	h.holdSyncs = true
	h.serve(map[int32]*testLeader{2: l}) // t-0 appended: the link waits for its fsync
	require.Empty(t, h.env.peerReqs)
	other := newTestLeader(t, 3, l.cfg)
	other.lead(tps[0], 2, l.logs[tps[0]].Batches(), 1)
	l.reps[tps[0]].BecomeFollower(2)
	h.b.follow(tps[0], 3, 2) // t-0 moves to node 3 (its sync still held)
	l.produce(tps[1], values("y"))
	var toLeader2 int
	for _, p := range h.env.peerReqs {
		if p.Node == 2 {
			toLeader2++
		}
	}
	require.Equal(t, 1, toLeader2, "the link to node 2 fetches t-1 again")
	h.holdSyncs = false
	h.settle()
	h.catchUpWith(map[int32]*testLeader{2: l, 3: other}, l, tps[1], 20)
}
