package sim

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/linearizability"
)

// The requests a group member makes once it has joined (member.go).

func (m *member) sync() {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.Generation, req.MemberID = m.spec.Group, m.gen, m.id
	pt, pr := "consumer", m.protocol
	req.ProtocolType, req.Protocol = &pt, &pr
	req.GroupAssignment = m.plan
	call := m.w.now
	m.sendTracked(req, int64(m.spec.RebalanceMs)+m.spec.TimeoutMs,
		func(r kmsg.Response, inc uint64, err error) {
			if err != nil {
				m.retry()
				return
			}
			m.synced(call, inc, r.(*kmsg.SyncGroupResponse))
		})
}

func (m *member) synced(call int64, inc uint64, resp *kmsg.SyncGroupResponse) {
	m.code("sync-group", resp.ErrorCode)
	switch code := resp.ErrorCode; {
	case code == 0:
	case code == kerr.RebalanceInProgress.Code:
		m.rejoin()
		return
	case code == kerr.UnknownMemberID.Code || code == kerr.IllegalGeneration.Code:
		m.reset()
		m.rejoin()
		return
	case m.coordinatorLost(code):
		return
	default:
		m.w.fail("unexpected-error", "%s: SyncGroup of %s answered %s", m.name, m.spec.Group,
			errName(code))
		m.retry()
		return
	}
	var a kmsg.ConsumerMemberAssignment
	var owned []int32
	if err := a.ReadFrom(resp.MemberAssignment); err == nil {
		for _, t := range a.Topics {
			if t.Topic == m.spec.Topic {
				owned = append(owned, t.Partitions...)
			}
		}
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i] < owned[j] })
	m.w.recordGroup(linearizability.GroupEvent{Kind: linearizability.GroupSynced,
		Group: m.spec.Group, Client: int(m.actor), Incarnation: inc, Member: m.id,
		Generation: m.gen, Topic: m.spec.Topic, Partitions: owned, Plan: string(a.UserData),
		Call: call, Return: m.w.now})
	m.owned = owned
	m.state = mStable
	m.syncedAt = m.w.now
	m.nextHB = m.w.now + m.hbInterval()
	m.fetchOwned = len(owned) > 0
	m.wakeIn(0)
}

func (m *member) hbInterval() int64 { return int64(m.spec.SessionMs) / 3 * ms }

func (m *member) heartbeat() {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID = m.spec.Group, m.gen, m.id
	call := m.w.now
	m.nextHB = call + m.hbInterval()
	m.sendTracked(req, m.spec.TimeoutMs, func(r kmsg.Response, inc uint64, err error) {
		if err != nil {
			m.wakeIn(m.spec.BackoffMs * ms)
			return
		}
		code := r.(*kmsg.HeartbeatResponse).ErrorCode
		m.code("heartbeat", code)
		switch {
		case code == 0:
			m.hbOKSent = call
			m.w.recordGroup(linearizability.GroupEvent{Kind: linearizability.GroupHeartbeat,
				Group: m.spec.Group, Client: int(m.actor), Incarnation: inc, Member: req.MemberID,
				Generation: req.Generation, Call: call, Return: m.w.now})
			m.wakeIn(0)
		case m.state != mStable || req.MemberID != m.id || req.Generation != m.gen:
			m.wakeIn(0) // about a membership already given up
		case code == kerr.RebalanceInProgress.Code:
			m.rejoin()
		case code == kerr.UnknownMemberID.Code || code == kerr.IllegalGeneration.Code:
			m.reset()
			m.rejoin()
		case m.coordinatorLost(code):
		default:
			m.w.fail("unexpected-error", "%s: Heartbeat of %s answered %s", m.name,
				m.spec.Group, errName(code))
			m.retry()
		}
	})
}

// commit commits a fresh value for one partition as member id of generation gen.
func (m *member) commit(id string, gen int32, part int32) {
	m.count++
	value := int64(1000+m.num)*1_000_000_000 + m.count
	tp := core.TopicPartition{Topic: m.spec.Topic, Partition: part}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = m.spec.Group, gen, id
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = part, value, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	call := m.w.now
	op := m.w.record(linearizability.Op{Kind: linearizability.OpCommit, Client: int(m.actor),
		TP: tp, Group: m.spec.Group, Call: call, Outcome: linearizability.Unknown,
		Offset: value})
	m.sendTracked(req, m.spec.TimeoutMs, func(r kmsg.Response, inc uint64, err error) {
		if err != nil {
			m.wakeIn(m.spec.BackoffMs * ms)
			return
		}
		code := int16(-1)
		for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
			for _, p := range t.Partitions {
				code = p.ErrorCode
			}
		}
		m.code("member-offset-commit", code)
		if m.rt != nil {
			m.w.hist.Op(op).Coord = inc // the coordinator term (coord_term.go)
		}
		m.w.recordGroup(linearizability.GroupEvent{Kind: linearizability.GroupCommit,
			Group: m.spec.Group, Client: int(m.actor), Incarnation: inc, Member: id,
			Generation: gen, Topic: tp.Topic, Code: code, Op: op, Call: call,
			Return: m.w.now})
		switch code {
		case 0:
			m.w.resolve(op, linearizability.OK, value, 0)
		case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code,
			kerr.RebalanceInProgress.Code, kerr.UnknownTopicOrPartition.Code,
			kerr.FencedInstanceID.Code:
			m.w.resolve(op, linearizability.Failed, value, code)
		default:
			m.w.hist.Op(op).ErrCode = code // may or may not have been stored
		}
		m.committed(id, gen, code)
	})
}

// committed reacts to a commit's error as the member it was made for.
func (m *member) committed(id string, gen int32, code int16) {
	if m.state != mStable || id != m.id || gen != m.gen {
		m.wakeIn(0)
		return
	}
	switch {
	case code == kerr.RebalanceInProgress.Code:
		m.rejoin()
	case code == kerr.UnknownMemberID.Code || code == kerr.IllegalGeneration.Code:
		m.reset()
		m.rejoin()
	case m.coordinatorLost(code):
	default:
		m.wakeIn(0)
	}
}

// fetchCommitted reads the committed offsets of the partitions just assigned, as a
// consumer does to know where to start.
func (m *member) fetchCommitted() {
	owned := m.owned
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(m.vers[req.Key()])
	if req.Version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = m.spec.Group
		t := kmsg.NewOffsetFetchRequestGroupTopic()
		t.Topic, t.Partitions = m.spec.Topic, owned
		g.Topics = append(g.Topics, t)
		req.Groups = append(req.Groups, g)
	} else {
		req.Group = m.spec.Group
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = m.spec.Topic, owned
		req.Topics = append(req.Topics, t)
	}
	call := m.w.now
	m.sendTracked(req, m.spec.TimeoutMs, func(r kmsg.Response, inc uint64, err error) {
		if err == nil {
			if m.rt == nil {
				inc = 0 // one node: no coordinator terms
			}
			m.fetched(call, inc, r.(*kmsg.OffsetFetchResponse))
		}
		m.wakeIn(0)
	})
}

func (m *member) fetched(call int64, coord uint64, resp *kmsg.OffsetFetchResponse) {
	groupCode := resp.ErrorCode
	topics := make([]kmsg.OffsetFetchResponseGroupTopic, 0)
	if resp.Version >= 8 {
		for _, g := range resp.Groups {
			groupCode = g.ErrorCode
			topics = append(topics, g.Topics...)
		}
	} else {
		for _, t := range resp.Topics {
			gt := kmsg.NewOffsetFetchResponseGroupTopic()
			gt.Topic = t.Topic
			for _, p := range t.Partitions {
				gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				gp.Partition, gp.Offset, gp.ErrorCode = p.Partition, p.Offset, p.ErrorCode
				gt.Partitions = append(gt.Partitions, gp)
			}
			topics = append(topics, gt)
		}
	}
	m.code("member-offset-fetch", groupCode)
	if groupCode != 0 {
		return
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			m.code("member-offset-fetch", p.ErrorCode)
			if p.ErrorCode != 0 || t.Topic != m.spec.Topic {
				continue
			}
			m.w.record(linearizability.Op{Kind: linearizability.OpFetchCommitted,
				Client: int(m.actor), TP: core.TopicPartition{Topic: t.Topic,
					Partition: p.Partition}, Group: m.spec.Group, Call: call,
				Return: m.w.now, Outcome: linearizability.OK, Offset: p.Offset, Coord: coord})
		}
	}
}

// leave leaves the group (LeaveGroup) and stays out for down.
func (m *member) leave(down int64) {
	m.w.stats.Faults["member-leave"]++
	req := kmsg.NewPtrLeaveGroupRequest()
	req.SetVersion(m.vers[req.Key()])
	req.Group = m.spec.Group
	if req.Version >= 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = m.id
		req.Members = append(req.Members, lm)
	} else {
		req.MemberID = m.id
	}
	m.reset()
	m.state, m.rejoinAt = mOut, m.w.now+down
	m.sendTracked(req, m.spec.TimeoutMs, func(r kmsg.Response, _ uint64, err error) {
		if err == nil {
			resp := r.(*kmsg.LeaveGroupResponse)
			m.code("leave-group", resp.ErrorCode)
			for _, lm := range resp.Members {
				m.code("leave-group", lm.ErrorCode)
			}
		}
		m.wakeIn(0)
	})
}
