package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
)

// sessionFetch is a fetch of the given partitions of topic at offsets, as session id at
// epoch; forget lists partitions to drop from the session.
func sessionFetch(id, epoch int32, topic string, offsets map[int32]int64,
	forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxBytes, req.MinBytes = maxVersion(kmsg.Fetch), 1<<20, 1
	req.SessionID, req.SessionEpoch = id, epoch
	if len(offsets) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for p := range int32(16) {
			off, ok := offsets[p]
			if !ok {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		f := kmsg.NewFetchRequestForgottenTopic()
		f.Topic, f.Partitions = topic, forget
		req.ForgottenTopics = append(req.ForgottenTopics, f)
	}
	return req
}

// partsOf lists the partitions a fetch response carries, with their record bytes.
func partsOf(t *testing.T, resp kmsg.Response) map[int32]int {
	t.Helper()
	fr := resp.(*kmsg.FetchResponse)
	require.Zero(t, fr.ErrorCode, kerr.ErrorForCode(fr.ErrorCode))
	out := map[int32]int{}
	for _, tt := range fr.Topics {
		for _, p := range tt.Partitions {
			require.Zero(t, p.ErrorCode)
			out[p.Partition] = len(p.RecordBatches)
		}
	}
	return out
}

func TestFetchSessionIncrementalListsOnlyNews(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 3)
	h.do(produceReq(-1, "t", 0, values("a")))

	// A full fetch at epoch 0 creates a session and lists every partition.
	resp := h.do(sessionFetch(0, 0, "t", map[int32]int64{0: 0, 1: 0, 2: 0}))
	id := resp.(*kmsg.FetchResponse).SessionID
	require.NotZero(t, id, "a session was created")
	parts := partsOf(t, resp)
	require.Len(t, parts, 3)
	require.Positive(t, parts[0])

	// Epoch 1: the client moves partition 0 on; nothing else changed: nothing listed.
	parts = partsOf(t, h.do(sessionFetch(id, 1, "t", map[int32]int64{0: 1})))
	require.Empty(t, parts, "no partition has news")

	// New data on partition 2 only: only partition 2 is listed, at its cached offset 0.
	h.do(produceReq(-1, "t", 2, values("b")))
	parts = partsOf(t, h.do(sessionFetch(id, 2, "t", nil)))
	require.Equal(t, []int32{2}, keys(parts))
	require.Positive(t, parts[2])

	// The client forgets partition 2 (and moves it on); data on it is no longer listed.
	h.do(produceReq(-1, "t", 2, values("c")))
	parts = partsOf(t, h.do(sessionFetch(id, 3, "t", nil, 2)))
	require.Empty(t, parts)
}

func keys(m map[int32]int) []int32 {
	var out []int32
	for p := range int32(16) {
		if _, ok := m[p]; ok {
			out = append(out, p)
		}
	}
	return out
}

func TestFetchSessionEpochAndIDErrors(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 1)
	resp := h.do(sessionFetch(0, 0, "t", map[int32]int64{0: 0}))
	id := resp.(*kmsg.FetchResponse).SessionID
	require.NotZero(t, id)

	code := func(r kmsg.Response) int16 { return r.(*kmsg.FetchResponse).ErrorCode }
	require.Equal(t, kerr.InvalidFetchSessionEpoch.Code,
		code(h.do(sessionFetch(id, 5, "t", nil))), "wrong epoch")
	require.Equal(t, kerr.FetchSessionIDNotFound.Code,
		code(h.do(sessionFetch(id+2, 1, "t", nil))), "unknown id")
	require.Equal(t, kerr.InvalidFetchSessionEpoch.Code,
		code(h.do(sessionFetch(id, -7, "t", nil))), "negative epoch")
	// A wrong epoch does not consume the expected one.
	require.Zero(t, code(h.do(sessionFetch(id, 1, "t", nil))))

	// A sessionless fetch naming the session closes it.
	full := sessionFetch(id, -1, "t", map[int32]int64{0: 0})
	resp = h.do(full)
	require.Zero(t, resp.(*kmsg.FetchResponse).SessionID)
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, code(h.do(sessionFetch(id, 2, "t", nil))))
}

func TestFetchSessionCacheIsBounded(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Limits.FetchSessionCacheSlots = 2
		c.Limits.FetchSessionCacheMaxPartitions = 3
	})
	h.mustCreate("t", 3)
	newSession := func(offsets map[int32]int64) int32 {
		return h.do(sessionFetch(0, 0, "t", offsets)).(*kmsg.FetchResponse).SessionID
	}
	a := newSession(map[int32]int64{0: 0})
	b := newSession(map[int32]int64{1: 0})
	require.NotZero(t, a)
	require.NotZero(t, b)
	require.Zero(t, newSession(map[int32]int64{2: 0}), "no slot left: sessionless")
	require.Equal(t, 2, len(h.b.sessions.byID))

	// Growing a session past the partition bound closes it.
	resp := h.do(sessionFetch(b, 1, "t", map[int32]int64{0: 0, 2: 0}))
	require.Equal(t, kerr.FetchSessionIDNotFound.Code, resp.(*kmsg.FetchResponse).ErrorCode)
	require.Equal(t, 1, h.b.sessions.partitions)

	// An idle session's slot goes to a newcomer once the eviction time passed.
	c := newSession(map[int32]int64{1: 0})
	require.NotZero(t, c)
	require.Zero(t, newSession(map[int32]int64{2: 0}))
	h.advance(sessionEvictionMs * time.Millisecond)
	d := newSession(map[int32]int64{2: 0})
	require.NotZero(t, d, "an idle session was evicted")
	require.Len(t, h.b.sessions.byID, 2)
	require.LessOrEqual(t, h.b.sessions.partitions, 3)
}

func TestFetchSessionParkedFetchAnswersOnlyNews(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 2)
	resp := h.do(sessionFetch(0, 0, "t", map[int32]int64{0: 0, 1: 0}))
	id := resp.(*kmsg.FetchResponse).SessionID
	req := sessionFetch(id, 1, "t", nil)
	req.MaxWaitMillis = 10_000
	rid := h.send(req)
	h.settle()
	_, answered := h.reply(rid)
	require.False(t, answered, "nothing new: the fetch waits")
	h.do(produceReq(-1, "t", 1, values("x")))
	got, ok := h.reply(rid)
	require.True(t, ok)
	parts := partsOf(t, got)
	require.Equal(t, []int32{1}, keys(parts))
	require.Equal(t, id, got.(*kmsg.FetchResponse).SessionID)
}

// Partitions that returned records go to the end of the session's order, so that under a
// tight response cap every partition is served in turn.
func TestFetchSessionRotatesServedPartitions(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.FetchMaxBytes = 1024 })
	h.mustCreate("t", 3)
	for p := range int32(3) {
		for range 4 {
			h.do(produceReq(-1, "t", p, values(string(make([]byte, 600)))))
		}
	}
	resp := h.do(sessionFetch(0, 0, "t", map[int32]int64{0: 0, 1: 0, 2: 0}))
	id := resp.(*kmsg.FetchResponse).SessionID
	first := servedWithData(t, resp)
	require.Equal(t, []int32{0}, first, "the cap leaves room for one batch")
	served := map[int32]bool{0: true}
	for epoch := int32(1); epoch <= 2; epoch++ {
		got := servedWithData(t, h.do(sessionFetch(id, epoch, "t", nil)))
		require.Len(t, got, 1)
		served[got[0]] = true
	}
	require.Len(t, served, 3, "every partition got its turn")
}

func servedWithData(t *testing.T, resp kmsg.Response) []int32 {
	var out []int32
	for _, p := range keys(partsOf(t, resp)) {
		if partsOf(t, resp)[p] > 0 {
			out = append(out, p)
		}
	}
	return out
}

// A client library's view: franz-go's and librdkafka's consumers send epoch 0 with
// session id 0, then increment, resending only partitions whose offset moved; the
// sequence must read every record exactly once.
func TestFetchSessionReadsEveryRecordOnce(t *testing.T) {
	h := newHarness(t)
	h.mustCreate("t", 2)
	pos := map[int32]int64{0: 0, 1: 0}
	send := map[int32]int64{0: 0, 1: 0}
	var id, epoch int32
	var got []string
	for round := range 6 {
		h.do(produceReq(-1, "t", int32(round%2), values(fmt.Sprintf("v%d", round))))
		req := sessionFetch(id, epoch, "t", send)
		resp := roundTripResponse(t, h.do(roundTripRequest(t, req))).(*kmsg.FetchResponse)
		require.Zero(t, resp.ErrorCode)
		id, epoch = resp.SessionID, epoch+1
		send = map[int32]int64{}
		for _, tt := range resp.Topics {
			for _, p := range tt.Partitions {
				vals, next := decodeFrom(t, p.RecordBatches, pos[p.Partition])
				got = append(got, vals...)
				if next != pos[p.Partition] {
					pos[p.Partition], send[p.Partition] = next, next
				}
			}
		}
	}
	require.Equal(t, []string{"v0", "v1", "v2", "v3", "v4", "v5"}, got)
}

// decodeFrom returns the values of records at or past offset in batches, and the
// offset after the last batch.
func decodeFrom(t *testing.T, batches []byte, offset int64) ([]string, int64) {
	t.Helper()
	var out []string
	require.NoError(t, batch.Split(batches, func(hd batch.Header, b []byte) error {
		kvs, err := batch.Records(b)
		require.NoError(t, err)
		for i, kv := range kvs {
			if hd.BaseOffset+int64(i) >= offset {
				out = append(out, string(kv.Value))
			}
		}
		offset = hd.NextOffset()
		return nil
	}))
	return out, offset
}

// inSession sets a fetch's session fields.
func inSession(req *kmsg.FetchRequest, id, epoch int32) *kmsg.FetchRequest {
	req.SessionID, req.SessionEpoch = id, epoch
	return req
}

// A follower told its log diverges (DivergingEpoch, no records, nothing else new) is
// told so in an incremental answer too, as Kafka's session does: left out, it would
// fetch the same position for ever. And a partition whose error cleared is listed
// again although its high-water mark did not move (Kafka resets what it told).
func TestFetchSessionListsDivergenceAndClearedErrors(t *testing.T) {
	h := leaderHarness(t, ids(1, 2), "1")
	requireCode(t, nil, producePart(t, h.do(produceReq(1, "r", 0, values("a")))).ErrorCode)
	_ = h.do(followerFetch(2, "r", 0, 1, 2, 2, 0))
	requireCode(t, nil, producePart(t, h.do(produceReq(1, "r", 0, values("b")))).ErrorCode)

	// Node 3 at offset 3 with last epoch 2: its log diverges at 2 (follower_fetch_test).
	resp := h.do(inSession(followerFetch(3, "r", 0, 3, 2, 2, 0), 0, 0)).(*kmsg.FetchResponse)
	id := resp.SessionID
	require.NotZero(t, id)
	require.True(t, h.b.sessions.byID[id].privileged, "a follower's session")
	require.EqualValues(t, 2, fetchOne(t, resp).DivergingEpoch.EndOffset)
	inc := kmsg.NewPtrFetchRequest()
	inc.Version, inc.ReplicaID, inc.MaxBytes = maxVersion(kmsg.Fetch), 3, 1<<20
	inc = inSession(inc, id, 1)
	f := fetchOne(t, h.do(inc))
	require.EqualValues(t, 2, f.DivergingEpoch.EndOffset, "still diverging: listed")

	// A consumer past the end gets OFFSET_OUT_OF_RANGE; moved back to the end, it is
	// listed (no records, the same high-water mark) so it learns the error cleared.
	resp = h.do(inSession(fetchReq("r", 0, 9, 0, 1), 0, 0)).(*kmsg.FetchResponse)
	cid := resp.SessionID
	requireCode(t, kerr.OffsetOutOfRange, fetchOne(t, resp).ErrorCode)
	cf := fetchOne(t, h.do(inSession(fetchReq("r", 0, 2, 0, 1), cid, 1)))
	requireCode(t, nil, cf.ErrorCode)
	require.Empty(t, partsOf(t, h.do(inSession(fetchReq("r", 0, 2, 0, 1), cid, 2))),
		"then nothing new")
}

// Eviction as Kafka's FetchSessionCache ranks sessions: a follower's (privileged)
// newcomer takes the smallest consumer session's slot however recently it was used; a
// consumer's newcomer cannot take a follower's, nor a young session's; once sessions
// are sessionEvictionMs old a larger consumer session takes a smaller one's slot, and
// one idle that long goes first.
func TestFetchSessionEvictionKeepsFollowersAndLargeSessions(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Limits.FetchSessionCacheSlots = 2 })
	h.mustCreate("t", 4)
	open := func(replica int32, parts ...int32) int32 {
		offsets := map[int32]int64{}
		for _, p := range parts {
			offsets[p] = 0
		}
		req := sessionFetch(0, 0, "t", offsets)
		req.ReplicaID = replica
		return h.do(req).(*kmsg.FetchResponse).SessionID
	}
	small := open(-1, 0)
	large := open(-1, 0, 1, 2)
	require.NotZero(t, small)
	require.NotZero(t, large)
	require.Zero(t, open(-1, 0, 1, 2, 3), "young sessions are not taken by a consumer")
	follower := open(5, 0)
	require.NotZero(t, follower, "a follower's session takes a consumer's slot")
	require.Nil(t, h.b.sessions.byID[small], "the smallest went")
	require.NotNil(t, h.b.sessions.byID[large])

	// Both old now, both used just now: a consumer may take only a smaller consumer
	// session, never the follower's.
	h.advance(sessionEvictionMs * time.Millisecond)
	for _, id := range []int32{large, follower} {
		h.b.sessions.byID[id].lastUsed = h.now
	}
	require.Zero(t, open(-1, 0, 1), "smaller than every session it may take")
	bigger := open(-1, 0, 1, 2, 3)
	require.NotZero(t, bigger, "a larger consumer session takes the smaller's slot")
	require.Nil(t, h.b.sessions.byID[large])
	require.NotNil(t, h.b.sessions.byID[follower], "the follower's session is kept")

	// Idle for the eviction time: the least recently used goes first, whatever it is.
	h.b.sessions.byID[bigger].lastUsed = h.now
	h.advance(sessionEvictionMs * time.Millisecond)
	h.b.sessions.byID[bigger].lastUsed = h.now
	require.NotZero(t, open(-1, 3))
	require.Nil(t, h.b.sessions.byID[follower], "the idle follower session went")
}

// A session serves only the replica that opened it: a follower naming another
// follower's (or a consumer's) session, or a consumer naming a follower's, gets
// FETCH_SESSION_ID_NOT_FOUND; the leader would otherwise record the other replica's
// cached fetch offsets as this follower's and could count it caught up.
func TestFetchSessionServesOnlyItsOwner(t *testing.T) {
	h := leaderHarness(t, ids(1, 2, 3), "1")
	requireCode(t, nil, producePart(t, h.do(produceReq(1, "r", 0, values("a")))).ErrorCode)
	open := func(replica int32) int32 {
		req := inSession(fetchReq("r", 0, 1, 0, 1), 0, 0)
		req.ReplicaID = replica
		resp := h.do(req).(*kmsg.FetchResponse)
		require.NotZero(t, resp.SessionID)
		return resp.SessionID
	}
	follower2, consumer := open(2), open(-1)
	use := func(replica, id int32) int16 {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes = maxVersion(kmsg.Fetch), replica, 1<<20
		return h.do(inSession(req, id, 1)).(*kmsg.FetchResponse).ErrorCode
	}
	requireCode(t, kerr.FetchSessionIDNotFound, use(3, follower2), "another follower's")
	requireCode(t, kerr.FetchSessionIDNotFound, use(-1, follower2), "a consumer")
	requireCode(t, kerr.FetchSessionIDNotFound, use(3, consumer), "a consumer's")
	requireCode(t, nil, use(2, follower2), "its owner")
	requireCode(t, nil, use(-1, consumer), "its owner")
}
