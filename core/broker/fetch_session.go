package broker

// Incremental fetch sessions (KIP-227). A consumer or follower that fetches the same
// partitions over and over sends them once; the broker remembers them (and what it last
// told the client about each) and later requests carry only what changed, responses
// only partitions with something new.
//
// Epochs, as Kafka reads them:
//   - SessionEpoch -1 (FINAL): a sessionless full fetch. A non-zero SessionID names a
//     session to close. The response's SessionID is 0.
//   - SessionEpoch 0 (INITIAL): a full fetch asking for a new session (closing the one
//     named, if any). The response carries the new session's id, or 0 when the cache has
//     no room: the client then keeps sending full fetches.
//   - SessionEpoch n > 0: an incremental fetch of session SessionID, which must exist
//     and have been opened by the same ReplicaID (a follower's session by that
//     follower, a consumer's by a consumer; else FETCH_SESSION_ID_NOT_FOUND: a follower
//     must never be credited with another replica's fetch offsets) and expect epoch n (else
//     INVALID_FETCH_SESSION_EPOCH). Topics add or update partitions (their fetch offset
//     and limits), ForgottenTopics remove them; the fetch covers every partition of the
//     session. Any other epoch is read the same way: it never matches.
//
// An incremental response lists a partition when it has records, an error or a
// diverging epoch (a follower must truncate), or when its high-water mark, last stable
// offset or log start offset differs from what this session last told the client; after
// an error, its next answer is listed whatever it holds (Kafka's rule). Partitions that returned records move to the end of the
// session's order, so a large session cannot starve its last partitions under the
// response size cap.
//
// Bounds (docs/limits.md, Fetch sessions): at most max.incremental.fetch.session.cache.slots
// sessions (Kafka's setting and default, 1,000) and sluice.fetch.session.cache.max.partitions
// partitions over all of them. A new session takes a free slot, else the slot of the
// least recently used session idle for sessionEvictionMs; failing that, the least
// valuable session that is evictable, as Kafka's FetchSessionCache ranks them (a
// session's worth is (privileged, partitions): a follower's session is privileged and
// outranks every consumer's; among equals the larger session is kept). A follower's
// newcomer may take any consumer session's slot, and a privileged session's once that
// one is sessionEvictionMs old (since creation); a consumer's newcomer only a consumer
// session that is that old. The victim must be worth no more than the newcomer (ties go
// by session id, as in Kafka). Otherwise no session is made (SessionID 0) and the
// client fetches in full. Followers' sessions count against the same slots. An update
// that would take the cache past its partition bound closes the session:
// FETCH_SESSION_ID_NOT_FOUND, and the client starts over with a full fetch.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
)

// sessionEvictionMs is how long a session must be idle before a new one may take its
// slot (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS).
const sessionEvictionMs = 120_000

// sessionPart is one partition of a session: the request's fields the client no longer
// resends, and what the last response said about it.
type sessionPart struct {
	tp                 core.TopicPartition
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
	logStartOffset     int64
	sent               bool // the client was told hwm, lso and logStart below
	hwm, lso, logStart int64
}

type fetchSession struct {
	id         int32
	epoch      int32 // the epoch the next incremental fetch must carry
	privileged bool  // a follower's
	owner      int32 // the ReplicaID that opened it (-1: a consumer); only it may use it
	parts      map[core.TopicPartition]*sessionPart
	order      []core.TopicPartition
	lastUsed   core.Time
	created    core.Time
	closed     bool // removed from the cache; a parked fetch of it still holds it
}

type sessionCache struct {
	byID       map[int32]*fetchSession
	partitions int
}

// resolveFetch applies a request's session fields. It returns the full request to serve
// (for an incremental fetch, every partition of the session), the session the response
// belongs to (nil: sessionless), and a top-level error code.
func (rm *replicaManager) resolveFetch(m *kmsg.FetchRequest) (*kmsg.FetchRequest,
	*fetchSession, int16) {
	c := &rm.sessions
	switch {
	case m.SessionEpoch == -1:
		rm.closeSession(m.SessionID)
		return m, nil, 0
	case m.SessionEpoch == 0:
		rm.closeSession(m.SessionID)
		return m, rm.newSession(m), 0
	}
	s := c.byID[m.SessionID]
	if s == nil || s.owner != max(fetchReplicaID(m), -1) {
		// Another replica's session is not found either: a follower whose fetch
		// named it would be credited with that replica's fetch offsets.
		rm.hit(pFetchSessionNotFound)
		return nil, nil, kerr.FetchSessionIDNotFound.Code
	}
	if s.epoch != m.SessionEpoch {
		rm.hit(pFetchSessionBadEpoch)
		return nil, nil, kerr.InvalidFetchSessionEpoch.Code
	}
	if !rm.updateSession(s, m) {
		rm.hit(pFetchSessionFull)
		rm.closeSession(s.id)
		return nil, nil, kerr.FetchSessionIDNotFound.Code
	}
	s.epoch = nextSessionEpoch(s.epoch)
	s.lastUsed = rm.now
	rm.hit(pFetchSessionIncremental)
	return s.request(m), s, 0
}

func nextSessionEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// newSession caches a session for a full fetch asking for one, or returns nil when
// there is no room (the response then says SessionID 0).
func (rm *replicaManager) newSession(m *kmsg.FetchRequest) *fetchSession {
	c := &rm.sessions
	n := 0
	for _, t := range m.Topics {
		n += len(t.Partitions)
	}
	privileged := fetchReplicaID(m) >= 0 // a follower
	limits := rm.cfg.Limits
	if limits.FetchSessionCacheSlots <= 0 || n > limits.FetchSessionCacheMaxPartitions {
		rm.hit(pFetchSessionNoRoom)
		return nil
	}
	id := rm.sessionID()
	for len(c.byID) >= limits.FetchSessionCacheSlots ||
		c.partitions+n > limits.FetchSessionCacheMaxPartitions {
		victim := rm.evictable(evictKey{privileged, n, id})
		if victim == nil {
			rm.hit(pFetchSessionNoRoom)
			return nil
		}
		rm.hit(pFetchSessionEvicted)
		rm.lg.Debug("fetch session evicted", zap.Int32("session", victim.id),
			zap.Bool("privileged", victim.privileged), zap.Int("partitions", len(victim.parts)),
			zap.Bool("for_follower", privileged))
		rm.closeSession(victim.id)
	}
	s := &fetchSession{id: id, epoch: 1, privileged: privileged, owner: max(fetchReplicaID(m), -1),
		parts: map[core.TopicPartition]*sessionPart{}, lastUsed: rm.now, created: rm.now}
	if c.byID == nil {
		c.byID = map[int32]*fetchSession{}
	}
	c.byID[s.id] = s
	rm.updateSession(s, m)
	rm.hit(pFetchSessionCreated)
	return s
}

// sessionID draws an unused positive id. Ids are random, as Kafka's are, so that a
// client still holding a session id from before a restart is not mistaken for the
// owner of a new session that happens to get the same id.
func (rm *replicaManager) sessionID() int32 {
	for range 100 {
		id := int32(rm.rnd.Int63()&(1<<31-1)) | 1
		if _, used := rm.sessions.byID[id]; !used {
			return id
		}
	}
	core.Invariant(false, "B7", "no unused fetch session id after 100 draws")
	return 0
}

// evictKey is what a session is worth keeping, in Kafka's order: a follower's
// (privileged) session over a consumer's, then the larger, then the larger id.
type evictKey struct {
	privileged bool
	size       int
	id         int32
}

func (k evictKey) less(o evictKey) bool {
	if k.privileged != o.privileged {
		return !k.privileged
	}
	if k.size != o.size {
		return k.size < o.size
	}
	return k.id < o.id
}

// evictable picks the session a newcomer worth newcomer may replace (Kafka's
// FetchSessionCache.tryEvict): the least recently used session idle for
// sessionEvictionMs; else the least worth among those the newcomer may take (a
// follower's newcomer: any consumer session, or a privileged one created
// sessionEvictionMs ago; a consumer's: any session created that long ago that is not
// privileged), provided it is worth less than the newcomer. Ties go to the smaller id,
// so the choice does not depend on map order.
func (rm *replicaManager) evictable(newcomer evictKey) *fetchSession {
	var stale, least *fetchSession
	for _, s := range rm.sessions.byID {
		if rm.now.Millis()-s.lastUsed.Millis() >= sessionEvictionMs {
			if stale == nil || s.lastUsed < stale.lastUsed ||
				(s.lastUsed == stale.lastUsed && s.id < stale.id) {
				stale = s
			}
			continue
		}
		old := rm.now.Millis()-s.created.Millis() >= sessionEvictionMs
		mayTake := old && !s.privileged
		if newcomer.privileged {
			mayTake = !s.privileged || old
		}
		if mayTake && (least == nil || s.key().less(least.key())) {
			least = s
		}
	}
	switch {
	case stale != nil:
		return stale
	case least != nil && least.key().less(newcomer):
		return least
	default:
		return nil
	}
}

func (s *fetchSession) key() evictKey { return evictKey{s.privileged, len(s.parts), s.id} }

func (rm *replicaManager) closeSession(id int32) {
	s := rm.sessions.byID[id]
	if id == 0 || s == nil {
		return
	}
	delete(rm.sessions.byID, id)
	rm.sessions.partitions -= len(s.parts)
	s.closed = true
}

// updateSession adds or updates the request's partitions and forgets its forgotten
// ones. It returns false, changing nothing, when the cache would hold more partitions
// than its bound.
func (rm *replicaManager) updateSession(s *fetchSession, m *kmsg.FetchRequest) bool {
	added := 0
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			if s.parts[core.TopicPartition{Topic: t.Topic, Partition: p.Partition}] == nil {
				added++
			}
		}
	}
	if rm.sessions.partitions+added > rm.cfg.Limits.FetchSessionCacheMaxPartitions {
		return false
	}
	for _, f := range m.ForgottenTopics {
		for _, p := range f.Partitions {
			s.forget(core.TopicPartition{Topic: f.Topic, Partition: p}, &rm.sessions)
		}
	}
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			s.set(t.Topic, &p, &rm.sessions)
		}
	}
	return true
}

func (s *fetchSession) set(topic string, p *kmsg.FetchRequestTopicPartition,
	c *sessionCache) {
	tp := core.TopicPartition{Topic: topic, Partition: p.Partition}
	sp := s.parts[tp]
	if sp == nil {
		sp = &sessionPart{tp: tp}
		s.parts[tp] = sp
		s.order = append(s.order, tp)
		c.partitions++
	}
	if !mutantOn("fetch-session-stale-offset") || sp.fetchOffset == 0 {
		sp.fetchOffset = p.FetchOffset
	}
	sp.maxBytes = p.PartitionMaxBytes
	sp.currentLeaderEpoch, sp.lastFetchedEpoch = p.CurrentLeaderEpoch, p.LastFetchedEpoch
	sp.logStartOffset = p.LogStartOffset
}

func (s *fetchSession) forget(tp core.TopicPartition, c *sessionCache) {
	if s.parts[tp] == nil {
		return
	}
	delete(s.parts, tp)
	c.partitions--
	for i, x := range s.order {
		if x == tp {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// request is the full fetch an incremental one stands for: every partition of the
// session in the session's order, each topic once (where its first partition falls).
func (s *fetchSession) request(m *kmsg.FetchRequest) *kmsg.FetchRequest {
	full := *m
	full.Topics, full.ForgottenTopics = nil, nil
	index := map[string]int{} // a topic's entry in full.Topics
	for _, tp := range s.order {
		sp := s.parts[tp]
		i, ok := index[tp.Topic]
		if !ok {
			i = len(full.Topics)
			index[tp.Topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic = tp.Topic
			full.Topics = append(full.Topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition, p.FetchOffset, p.PartitionMaxBytes = tp.Partition, sp.fetchOffset,
			sp.maxBytes
		p.CurrentLeaderEpoch, p.LastFetchedEpoch = sp.currentLeaderEpoch, sp.lastFetchedEpoch
		p.LogStartOffset = sp.logStartOffset
		full.Topics[i].Partitions = append(full.Topics[i].Partitions, p)
	}
	return &full
}

// sessionResponse turns the full response to a session's fetch into what the client
// gets: the session id, and for an incremental fetch only the partitions with news.
// It records what the client was told and rotates partitions that returned records to
// the end of the order.
func (rm *replicaManager) sessionResponse(s *fetchSession, incremental bool,
	resp *kmsg.FetchResponse) {
	if s.closed {
		// Evicted or closed while the fetch was parked: the client's next incremental
		// fetch gets FETCH_SESSION_ID_NOT_FOUND; this answer is still a full one.
		if incremental {
			*resp = kmsg.FetchResponse{Version: resp.Version,
				ErrorCode: kerr.FetchSessionIDNotFound.Code}
		}
		return
	}
	resp.SessionID = s.id
	var moved []core.TopicPartition
	topics := resp.Topics[:0]
	for _, t := range resp.Topics {
		parts := t.Partitions[:0]
		for _, p := range t.Partitions {
			tp := core.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			sp := s.parts[tp]
			news := sp == nil || sp.news(&p)
			if sp != nil {
				// After an error the partition is listed again once it clears, as
				// Kafka does (its cached high-water mark becomes -1).
				sp.sent, sp.hwm, sp.lso, sp.logStart = p.ErrorCode == 0, p.HighWatermark,
					p.LastStableOffset, p.LogStartOffset
				if len(p.RecordBatches) > 0 {
					moved = append(moved, tp)
				}
			}
			if news || !incremental {
				parts = append(parts, p)
			}
		}
		if len(parts) > 0 {
			t.Partitions = parts
			topics = append(topics, t)
		}
	}
	resp.Topics = topics
	s.rotate(moved)
}

// news says whether a partition's answer tells the client something it was not told.
func (sp *sessionPart) news(p *kmsg.FetchResponseTopicPartition) bool {
	if mutantOn("fetch-session-records-only") {
		return len(p.RecordBatches) > 0 || !sp.sent
	}
	return len(p.RecordBatches) > 0 || p.ErrorCode != 0 || !sp.sent ||
		p.DivergingEpoch.Epoch >= 0 || p.HighWatermark != sp.hwm ||
		p.LastStableOffset != sp.lso || p.LogStartOffset != sp.logStart
}

// rotate moves the given partitions, in their order, to the end of the session's order.
func (s *fetchSession) rotate(moved []core.TopicPartition) {
	if len(moved) == 0 || mutantOn("fetch-session-no-rotate") {
		return
	}
	isMoved := make(map[core.TopicPartition]bool, len(moved))
	for _, tp := range moved {
		isMoved[tp] = true
	}
	kept := s.order[:0]
	for _, tp := range s.order {
		if !isMoved[tp] {
			kept = append(kept, tp)
		}
	}
	s.order = append(kept, moved...)
}
