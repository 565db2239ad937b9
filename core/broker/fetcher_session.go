package broker

// The follower's side of incremental fetch sessions (KIP-227), one session per leader
// link, as Kafka's replica fetcher keeps one FetchSessionHandler per source broker.
//
//   - With no session (epoch 0) the link's Fetch is full: every ready partition, with
//     SessionEpoch 0 asking for a session (and closing the one it names, if any). A
//     leader with no room answers SessionID 0; the next Fetch is full again.
//   - With a session (id, epoch n > 0) the Fetch carries only the ready partitions that
//     are new to the session or whose request fields (fetch offset, last fetched epoch,
//     current leader epoch, log start offset, max bytes) changed since they were last
//     sent; a partition of the session that is not ready (backing off after an error,
//     truncating, out of range, gone) goes in ForgottenTopics, and is sent whole again
//     when it is ready. The leader fetches every partition of the session, at the fetch
//     offsets it holds, and answers those with news.
//   - What the leader's session holds is updated when the request is built: one request
//     is in flight per link, and any failure resets the session.
//   - Reset: a transport error, a top-level error, a leader that answered with another
//     session id, or the leader closing the session makes the next Fetch full again.
//     FETCH_SESSION_ID_NOT_FOUND starts afresh (SessionID 0);
//     INVALID_FETCH_SESSION_EPOCH and the rest close the session they name. A session
//     error is followed by the full Fetch at once (a full Fetch never gets one); other
//     failures back off as before.
//
// A follower's session is privileged on the leader (fetch_session.go): it outranks
// consumers' sessions for the cache's slots.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/probe"
)

// Code probes of the follower's fetch sessions.
var (
	pFetcherSessionOpened      = probe.Register("broker/follower-session-opened")
	pFetcherSessionIncremental = probe.Register("broker/follower-session-incremental-fetch")
	pFetcherSessionLost        = probe.Register("broker/follower-session-lost")
	pFetcherSessionRefused     = probe.Register("broker/follower-session-not-granted")
)

// linkSession is a link's fetch session with its leader: its id and next epoch, and
// the partitions the leader's session holds, with the fields it holds for each.
type linkSession struct {
	id    int32 // 0: none
	epoch int32 // the epoch of the next Fetch; 0: full, asking for a session
	sent  map[core.TopicPartition]sentPartition
}

// sentPartition is a partition's request fields as the leader's session holds them.
type sentPartition struct {
	fetchOffset, logStart            int64
	currentEpoch, lastEpoch, maxSize int32
}

func sentOf(p *kmsg.FetchRequestTopicPartition) sentPartition {
	return sentPartition{fetchOffset: p.FetchOffset, logStart: p.LogStartOffset,
		currentEpoch: p.CurrentLeaderEpoch, lastEpoch: p.LastFetchedEpoch,
		maxSize: p.PartitionMaxBytes}
}

// sessionRequest fills req's session fields and partitions from every ready
// partition's fields (all, in the order given): all of them for a full Fetch, only
// what changed for an incremental one, the session's others forgotten. It records what
// the leader's session will hold.
func (s *linkSession) sessionRequest(req *kmsg.FetchRequest, ready []core.TopicPartition,
	fields map[core.TopicPartition]kmsg.FetchRequestTopicPartition) {
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	full := s.epoch == 0
	next := make(map[core.TopicPartition]sentPartition, len(ready))
	for _, tp := range ready {
		p := fields[tp]
		next[tp] = sentOf(&p)
		if prev, ok := s.sent[tp]; !full && ok && prev == next[tp] {
			continue
		}
		addFetchPartition(req, tp.Topic, p)
	}
	if !full {
		for _, tp := range sortedSent(s.sent) {
			if _, kept := next[tp]; kept {
				continue
			}
			addForgotten(req, tp)
			if mutantOn("fetcher-session-forgets-resend") {
				next[tp] = s.sent[tp] // still taken as held: not resent when ready again
			}
		}
	}
	s.sent = next
}

// addFetchPartition appends p to req under topic (each topic's partitions together).
func addFetchPartition(req *kmsg.FetchRequest, topic string, p kmsg.FetchRequestTopicPartition) {
	n := len(req.Topics)
	if n == 0 || req.Topics[n-1].Topic != topic {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		req.Topics = append(req.Topics, rt)
		n++
	}
	req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, p)
}

func addForgotten(req *kmsg.FetchRequest, tp core.TopicPartition) {
	n := len(req.ForgottenTopics)
	if n == 0 || req.ForgottenTopics[n-1].Topic != tp.Topic {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic = tp.Topic
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
		n++
	}
	req.ForgottenTopics[n-1].Partitions = append(req.ForgottenTopics[n-1].Partitions,
		tp.Partition)
}

func sortedSent(m map[core.TopicPartition]sentPartition) []core.TopicPartition {
	out := make([]core.TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// reset makes the next Fetch full. keepID: it names the session, closing it on the
// leader; otherwise it names none (the leader no longer has it).
func (s *linkSession) reset(keepID bool) {
	if !keepID {
		s.id = 0
	}
	s.epoch, s.sent = 0, nil
}

// sessionAnswered moves the link's session on after a Fetch answered without a
// top-level error: a full Fetch's answer names the new session (or 0: none); an
// incremental one must name the same session.
func (rm *replicaManager) sessionAnswered(link *leaderLink, req *fetcherRequest,
	resp *kmsg.FetchResponse) {
	s := &link.session
	switch {
	case req.sessionEpoch < 0: // sessionless (not sent by this fetcher; kept for safety)
	case req.sessionEpoch == 0 && resp.SessionID == 0:
		rm.hit(pFetcherSessionRefused)
		s.reset(false)
	case req.sessionEpoch == 0:
		rm.hit(pFetcherSessionOpened)
		s.id, s.epoch = resp.SessionID, 1
	case resp.SessionID == s.id:
		rm.hit(pFetcherSessionIncremental)
		s.epoch = nextSessionEpoch(s.epoch)
	default:
		rm.sessionLost(link, resp.SessionID == 0, "the leader answered another session id")
	}
}

// sessionLost resets the link's session after its leader refused or closed it; the
// next Fetch is full. gone: the leader no longer has it (do not name it).
func (rm *replicaManager) sessionLost(link *leaderLink, gone bool, why string) {
	rm.hit(pFetcherSessionLost)
	rm.lg.Info("fetch session with the leader lost; the next fetch is full",
		zap.Int32("leader", link.leader), zap.Int32("session", link.session.id),
		zap.Int32("epoch", link.session.epoch), zap.String("why", why))
	link.session.reset(!gone)
}

// sessionError handles a Fetch's top-level error: a session error resets the session
// and the full Fetch follows at once (true); anything else resets it too and is a
// failure of the whole request (false).
func (rm *replicaManager) sessionError(link *leaderLink, code int16) bool {
	switch code {
	case kerr.FetchSessionIDNotFound.Code:
		rm.sessionLost(link, true, kerr.ErrorForCode(code).Error())
		return true
	case kerr.InvalidFetchSessionEpoch.Code:
		rm.sessionLost(link, false, kerr.ErrorForCode(code).Error())
		return true
	default:
		link.session.reset(true)
		return false
	}
}
