package sim

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
)

// router is a client's view of a cluster, as a Kafka client keeps it: each partition's
// leader and the controller from Metadata answers, each group's coordinator from
// FindCoordinator answers, and one connection per node. Requests go where Kafka
// clients send them (clientBase.target): partition requests to the leader of their
// first partition (callers put only partitions with one leader in a request:
// sameLeader), group requests to the group's coordinator, topic administration to the
// controller, the rest to a bootstrap node, which moves on when its connection fails.
// An answer saying the view is stale (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
// NOT_CONTROLLER, NOT_COORDINATOR, ...) forgets that entry and asks the client's next
// pump for fresh metadata (stale). Only clustered worlds have routers: a single-node
// World sends everything to its node as before.
type router struct {
	leaders map[core.TopicPartition]int32 // node index
	coords  map[string]int32
	ctl     int32 // node index, -1 unknown
	conns   map[int32]*conn
	boot    int32
	stale   *topicMeta // the client's metadata schedule, refreshed early when stale
	// lastGroup is the key of the FindCoordinator below v4 in flight (which names none
	// in its answer).
	lastGroup string
}

func newRouter() *router {
	return &router{leaders: map[core.TopicPartition]int32{}, coords: map[string]int32{},
		ctl: -1, conns: map[int32]*conn{}}
}

// known returns the node index of a broker id, or -1.
func (w *World) nodeIndex(id int32) int32 {
	if id < 1 || int(id) > len(w.nodes) {
		return -1
	}
	return id - 1
}

// target is the node req goes to.
func (cb *clientBase) target(req kmsg.Request) int32 {
	r := cb.rt
	pick := func(i int32, ok bool) int32 {
		if ok && i >= 0 {
			return i
		}
		return r.boot
	}
	switch m := req.(type) {
	case *kmsg.ProduceRequest:
		if len(m.Topics) > 0 && len(m.Topics[0].Partitions) > 0 {
			return pick(r.leader(m.Topics[0].Topic, m.Topics[0].Partitions[0].Partition))
		}
	case *kmsg.FetchRequest:
		if len(m.Topics) > 0 && len(m.Topics[0].Partitions) > 0 {
			return pick(r.leader(m.Topics[0].Topic, m.Topics[0].Partitions[0].Partition))
		}
	case *kmsg.ListOffsetsRequest:
		if len(m.Topics) > 0 && len(m.Topics[0].Partitions) > 0 {
			return pick(r.leader(m.Topics[0].Topic, m.Topics[0].Partitions[0].Partition))
		}
	case *kmsg.DeleteRecordsRequest:
		if len(m.Topics) > 0 && len(m.Topics[0].Partitions) > 0 {
			return pick(r.leader(m.Topics[0].Topic, m.Topics[0].Partitions[0].Partition))
		}
	case *kmsg.CreateTopicsRequest, *kmsg.CreatePartitionsRequest, *kmsg.DeleteTopicsRequest,
		*kmsg.AlterPartitionAssignmentsRequest:
		return pick(r.ctl, true)
	}
	if g, ok := groupOf(req); ok {
		i, known := r.coords[g]
		return pick(i, known)
	}
	return r.boot
}

func (r *router) leader(topic string, p int32) (int32, bool) {
	i, ok := r.leaders[core.TopicPartition{Topic: topic, Partition: p}]
	return i, ok
}

// groupOf names the group a coordinator request is for.
func groupOf(req kmsg.Request) (string, bool) {
	switch m := req.(type) {
	case *kmsg.JoinGroupRequest:
		return m.Group, true
	case *kmsg.SyncGroupRequest:
		return m.Group, true
	case *kmsg.HeartbeatRequest:
		return m.Group, true
	case *kmsg.LeaveGroupRequest:
		return m.Group, true
	case *kmsg.OffsetCommitRequest:
		return m.Group, true
	case *kmsg.OffsetDeleteRequest:
		return m.Group, true
	case *kmsg.OffsetFetchRequest:
		if len(m.Groups) > 0 {
			return m.Groups[0].Group, true
		}
		return m.Group, true
	}
	return "", false
}

// learn updates the view from an answer, and forgets what an error says is stale.
func (cb *clientBase) learn(resp kmsg.Response, from int32) {
	r := cb.rt
	switch m := resp.(type) {
	case *kmsg.MetadataResponse:
		r.ctl = cb.w.nodeIndex(m.ControllerID)
		for _, t := range m.Topics {
			if t.Topic == nil || t.ErrorCode != 0 {
				continue
			}
			for _, p := range t.Partitions {
				tp := core.TopicPartition{Topic: *t.Topic, Partition: p.Partition}
				if i := cb.w.nodeIndex(p.Leader); i >= 0 && p.ErrorCode == 0 {
					r.leaders[tp] = i
				} else {
					delete(r.leaders, tp)
				}
				if cb.w.logging() {
					cb.w.logf(cb.name, "metadata: %s leader %d epoch %d (code %d)", tp,
						p.Leader, p.LeaderEpoch, p.ErrorCode)
				}
			}
		}
	case *kmsg.FindCoordinatorResponse:
		cb.learnCoordinator(m)
	case *kmsg.ProduceResponse:
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				cb.partitionCode(t.Topic, p.Partition, p.ErrorCode, from)
			}
		}
	case *kmsg.FetchResponse:
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				cb.partitionCode(t.Topic, p.Partition, p.ErrorCode, from)
			}
		}
	case *kmsg.ListOffsetsResponse:
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				cb.partitionCode(t.Topic, p.Partition, p.ErrorCode, from)
			}
		}
	case *kmsg.CreateTopicsResponse:
		for _, t := range m.Topics {
			if t.ErrorCode == kerr.NotController.Code {
				r.ctl = -1
				cb.refreshSoon()
			}
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		if m.ErrorCode == kerr.NotController.Code {
			r.ctl = -1
			cb.refreshSoon()
		}
	}
}

func (cb *clientBase) learnCoordinator(m *kmsg.FindCoordinatorResponse) {
	r := cb.rt
	if m.Version < 4 {
		if m.ErrorCode == 0 {
			r.coordsLast(cb.w.nodeIndex(m.NodeID))
		}
		return
	}
	for _, c := range m.Coordinators {
		if c.ErrorCode == 0 {
			r.coords[c.Key] = cb.w.nodeIndex(c.NodeID)
		}
	}
}

// coordsLast: a FindCoordinator below v4 names no key; the client asked for one group
// (lastGroup), whose coordinator this is.
func (r *router) coordsLast(i int32) {
	if r.lastGroup != "" {
		r.coords[r.lastGroup] = i
	}
}

// partitionCode forgets a partition's leader when its answer from node from says it
// moved (an answer from a node no longer believed to lead it is old news).
func (cb *clientBase) partitionCode(topic string, p int32, code int16, from int32) {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.FencedLeaderEpoch.Code,
		kerr.UnknownLeaderEpoch.Code, kerr.LeaderNotAvailable.Code,
		kerr.UnknownTopicOrPartition.Code, kerr.KafkaStorageError.Code:
		tp := core.TopicPartition{Topic: topic, Partition: p}
		if l, ok := cb.rt.leaders[tp]; ok && l == from {
			delete(cb.rt.leaders, tp)
		}
		cb.refreshSoon()
	}
}

// refreshSoon asks the client's next pump for fresh metadata.
func (cb *clientBase) refreshSoon() {
	if m := cb.rt.stale; m != nil && m.next > cb.w.now+100*ms {
		m.next = cb.w.now + 100*ms
	}
}

// groupCode forgets a group's coordinator when an answer says it moved.
func (cb *clientBase) groupCode(group string, code int16) {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		delete(cb.rt.coords, group)
	}
}

// connTo returns the client's connection to node i, dialing one when needed.
func (cb *clientBase) connTo(i int32) *conn {
	c := cb.rt.conns[i]
	if c == nil || !c.clientOpen {
		c = cb.w.dial(cb, cb.w.nodes[i])
		cb.rt.conns[i] = c
	}
	return c
}

// lostConn forgets c; a lost bootstrap connection moves the bootstrap to the next node.
func (r *router) lostConn(c *conn, nodes int) {
	for i, x := range r.conns {
		if x == c {
			delete(r.conns, i)
			if i == r.boot {
				r.boot = (r.boot + 1) % int32(nodes)
			}
		}
	}
}

// routed wraps a request's completion so that its answer updates the view first.
func (cb *clientBase) routed(req kmsg.Request, to int32, done func(kmsg.Response, error)) func(
	kmsg.Response, error) {
	if fc, ok := req.(*kmsg.FindCoordinatorRequest); ok {
		cb.rt.lastGroup = fc.CoordinatorKey
	}
	return func(resp kmsg.Response, err error) {
		if err != nil {
			cb.refreshSoon()
		} else {
			cb.learn(resp, to)
			if g, ok := groupOf(req); ok {
				cb.groupCode(g, groupErr(resp))
			}
		}
		cb.w.answering = to + 1
		done(resp, err)
		cb.w.answering = 0
	}
}

// groupErr is a coordinator answer's error code (the first partition's for offsets).
func groupErr(resp kmsg.Response) int16 {
	switch m := resp.(type) {
	case *kmsg.JoinGroupResponse:
		return m.ErrorCode
	case *kmsg.SyncGroupResponse:
		return m.ErrorCode
	case *kmsg.HeartbeatResponse:
		return m.ErrorCode
	case *kmsg.LeaveGroupResponse:
		return m.ErrorCode
	case *kmsg.OffsetCommitResponse:
		if len(m.Topics) > 0 && len(m.Topics[0].Partitions) > 0 {
			return m.Topics[0].Partitions[0].ErrorCode
		}
	case *kmsg.OffsetFetchResponse:
		if len(m.Groups) > 0 {
			return m.Groups[0].ErrorCode
		}
		if m.ErrorCode == 0 && len(m.Topics) > 0 && len(m.Topics[0].Partitions) > 0 {
			return m.Topics[0].Partitions[0].ErrorCode // v0-v1 have no top-level code
		}
		return m.ErrorCode
	}
	return 0
}

// sameAs reports whether tp may join a request whose first partition's leader is
// *lead (-2: tp is the first, whose leader it sets; -1: unknown). Always true when the
// world is not clustered.
func (cb *clientBase) sameAs(lead *int32, tp core.TopicPartition) bool {
	if cb.rt == nil {
		return true
	}
	l, ok := cb.rt.leaders[tp]
	if !ok {
		l = -1
	}
	if *lead == -2 {
		*lead = l
	}
	return l == *lead
}
