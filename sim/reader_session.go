package sim

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A reader with ReaderSpec.Sessions fetches through an incremental fetch session
// (KIP-227), as franz-go and librdkafka consumers do: a full fetch at epoch 0 asks for
// a session; later fetches name it with the next epoch and carry only the partitions
// whose position or limit changed. A session error, a lost answer or a crashed node
// starts over with a full fetch.
//
// The check (liveness, fetch-session-starved): a partition the reader knows to be
// behind (its last known high-water mark above its position) must move within a few
// fetches: the broker lists a partition with records and rotates served partitions to
// the end of the session, so every partition with data is served within one fetch per
// partition. A broker that forgets a position, or lists a partition it should not skip,
// leaves the reader stuck and is caught here.

type readerSession struct {
	id, epoch int32
	pos       map[int32]int64 // the fetch offset the broker holds, per partition
	partMax   map[int32]int32
	stuck     map[int32]int // completed fetches in a row a behind partition did not move
}

// sessions says whether the reader fetches through a session: sessions came with
// Fetch v7, and a client of an older version fetches in full.
func (r *reader) sessions() bool {
	return r.spec.Sessions && r.vers[int16(kmsg.Fetch)] >= 7 && r.rt == nil
}

// sessionFields fills req's session fields and the partitions it must carry.
func (r *reader) sessionFields(req *kmsg.FetchRequest, rt *kmsg.FetchRequestTopic) {
	s := &r.sess
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	full := s.epoch == 0
	if full || s.pos == nil {
		s.pos, s.partMax = map[int32]int64{}, map[int32]int32{}
	}
	kept := rt.Partitions[:0]
	for _, p := range rt.Partitions {
		old, known := s.pos[p.Partition]
		if full || !known || old != p.FetchOffset || s.partMax[p.Partition] != p.PartitionMaxBytes {
			kept = append(kept, p)
			s.pos[p.Partition], s.partMax[p.Partition] = p.FetchOffset, p.PartitionMaxBytes
		}
	}
	rt.Partitions = kept
}

// sessionAnswered moves the session on after an answer (err: no answer). It returns
// false when the answer's session error asks for a backoff.
func (r *reader) sessionAnswered(resp *kmsg.FetchResponse, err error) bool {
	s := &r.sess
	switch {
	case err != nil:
		// The broker may or may not have taken the epoch: start over.
		s.epoch = 0
		return true
	case resp.ErrorCode == kerr.FetchSessionIDNotFound.Code ||
		resp.ErrorCode == kerr.InvalidFetchSessionEpoch.Code:
		s.id, s.epoch = 0, 0
		return false
	case resp.ErrorCode != 0:
		s.epoch = 0
		return false
	case s.epoch == 0:
		s.id = resp.SessionID
		if s.id != 0 {
			s.epoch = 1
		}
	default:
		r.w.stats.SessionFetches++
		s.epoch++
		if s.epoch < 0 {
			s.epoch = 1
		}
	}
	return true
}

// checkProgress counts, per partition, completed session fetches in a row in which it
// was behind and did not move (before is each partition's position when the fetch was
// sent).
func (r *reader) checkProgress(before []int64, resp *kmsg.FetchResponse) {
	if !r.sessions() || resp.ErrorCode != 0 {
		return
	}
	s := &r.sess
	if s.stuck == nil {
		s.stuck = map[int32]int{}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				delete(s.stuck, p.Partition) // an error is news; its handling moves on
				if int(p.Partition) < len(before) {
					before[p.Partition] = -1
				}
			}
		}
	}
	limit := 2*len(r.parts) + 5
	for i, p := range r.parts {
		n := int32(i)
		if i >= len(before) || before[i] < 0 || p.pos != before[i] || p.hwm <= p.pos || p.resetPos {
			delete(s.stuck, n)
			continue
		}
		s.stuck[n]++
		if s.stuck[n] == limit {
			r.w.fail("liveness", "fetch-session-starved %s: %s stayed at offset %d below "+
				"the high-water mark %d for %d session fetches in a row", r.name, p.tp,
				p.pos, p.hwm, limit)
		}
	}
}
