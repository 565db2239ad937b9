package sim

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/batch"
)

// hostileJoin sends JoinGroup requests a coordinator must refuse without changing
// anything (a session timeout out of bounds, no protocols), or asks for a member id
// and leaves before joining with it (the id handed out with MEMBER_ID_REQUIRED is
// forgotten). Only the auditor's own join group is used.
func (a *auditor) hostileJoin() {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType = "audit-join", "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = a.w.brokerCfg.Groups.Coordinator.
		MinSessionTimeoutMs, 1000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0}
	req.Protocols = append(req.Protocols, p)
	kind := a.rnd.Intn(3)
	switch kind {
	case 0:
		req.SessionTimeoutMillis = 1 // below group.min.session.timeout.ms
	case 1:
		req.Protocols = nil
	}
	version := a.vers[int16(kmsg.JoinGroup)]
	if kind == 2 {
		version = max(version, 4) // MEMBER_ID_REQUIRED first
	}
	a.sendAt(req, version, func(r kmsg.Response, err error) {
		if err != nil {
			a.next(err)
			return
		}
		resp := r.(*kmsg.JoinGroupResponse)
		a.code("join-group", resp.ErrorCode)
		switch {
		case kind < 2 && resp.ErrorCode == 0:
			a.failf("an invalid JoinGroup (kind %d) was accepted", kind)
		case kind == 2 && resp.ErrorCode == kerr.MemberIDRequired.Code:
			a.leavePending(resp.MemberID)
			return
		case kind == 2 && resp.ErrorCode == 0:
			a.failf("JoinGroup v%d without a member id was accepted", version)
		}
		a.next(nil)
	})
}

// leavePending leaves with a member id that was handed out but never joined.
func (a *auditor) leavePending(id string) {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group, req.MemberID = "audit-join", id
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = id
	req.Members = append(req.Members, m)
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			resp := r.(*kmsg.LeaveGroupResponse)
			a.code("leave-group", resp.ErrorCode)
			for _, rm := range resp.Members {
				a.code("leave-group", rm.ErrorCode)
			}
		}
		a.next(err)
	})
}

// staleMember sends, for a real member of a consumer group (learnt from DescribeGroups),
// a heartbeat, sync or offset commit of a generation the group is not in: it must be
// refused, and it changes nothing. (Generation 0 would not do: a group's first
// rebalance runs in generation 0, and Kafka accepts its members' commits then.)
func (a *auditor) staleMember() {
	var groups []string
	for g, ms := range a.members {
		if len(ms) > 0 {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		a.describeGroups()
		return
	}
	sort.Strings(groups)
	g := groups[a.rnd.Intn(len(groups))]
	member := a.members[g][a.rnd.Intn(len(a.members[g]))]
	check := func(api string, code int16) {
		a.code(api, code)
		if code == 0 {
			a.failf("%s of generation %d from member %s of group %s succeeded", api,
				staleGeneration, member, g)
		}
	}
	var req kmsg.Request
	var answer func(kmsg.Response)
	version := int16(-1)
	switch a.rnd.Intn(3) {
	case 0:
		m := kmsg.NewPtrHeartbeatRequest()
		m.Group, m.MemberID, m.Generation = g, member, staleGeneration
		req, answer = m, func(r kmsg.Response) {
			check("heartbeat", r.(*kmsg.HeartbeatResponse).ErrorCode)
		}
	case 1:
		m := kmsg.NewPtrSyncGroupRequest()
		m.Group, m.MemberID, m.Generation = g, member, staleGeneration
		req, answer = m, func(r kmsg.Response) {
			check("sync-group", r.(*kmsg.SyncGroupResponse).ErrorCode)
		}
	default:
		m := kmsg.NewPtrOffsetCommitRequest()
		m.Group, m.MemberID, m.Generation = g, member, staleGeneration
		for _, ms := range a.w.cfg.Members {
			if ms.Group == g {
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.Topic = ms.Topic
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = 0, 1<<40
				rt.Partitions = append(rt.Partitions, rp)
				m.Topics = append(m.Topics, rt)
				break
			}
		}
		version = max(a.vers[int16(kmsg.OffsetCommit)], 1)
		req, answer = m, func(r kmsg.Response) {
			for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
				for _, p := range t.Partitions {
					check("offset-commit", p.ErrorCode)
				}
			}
		}
	}
	a.sendAnswered(req, version, answer)
}

// staleGeneration is a generation no group reaches in a run.
const staleGeneration = 1 << 30

// zombieProducer sends an idempotent batch under a producer id another client got,
// with a newer epoch and a sequence that cannot start one: a fenced-off instance of
// the producer, or a corrupted retry. It must be refused (UNKNOWN_PRODUCER_ID or
// OUT_OF_ORDER_SEQUENCE_NUMBER) and write nothing.
func (a *auditor) zombieProducer() {
	var pids []int64
	for k, who := range a.w.pids {
		if who != zombieName { // the zombie producer bumps its epochs: any may be current
			pids = append(pids, k[0])
		}
	}
	if len(pids) == 0 {
		a.metadata()
		return
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	pid := pids[a.rnd.Intn(len(pids))]
	tp := a.tp()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, int32(a.timeout())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = tp.Partition
	rp.Records = batch.Build([]batch.KV{{Key: []byte("audit"), Value: []byte("zombie")}},
		batch.Producer{ID: pid, Epoch: 1, BaseSequence: int32(a.rnd.Between(5, 1000))},
		(epochNs+a.w.now)/int64(ms))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	a.send(req, a.timeout(), func(r kmsg.Response, err error) {
		if err == nil {
			for _, t := range r.(*kmsg.ProduceResponse).Topics {
				for _, p := range t.Partitions {
					a.code("produce", p.ErrorCode)
					if p.ErrorCode == 0 {
						a.failf("a zombie batch of producer %d epoch 1 to %s was accepted "+
							"at offset %d", pid, tp, p.BaseOffset)
					}
				}
			}
		}
		a.next(err)
	})
}

// malformed sends requests with values no well-behaved client sends, each of which the
// broker must refuse for the partition or resource concerned (and must survive): a
// negative partition, a ListOffsets timestamp below -3, a DeleteRecords offset below
// -1, a config resource of an unknown type, a topic id nobody has.
func (a *auditor) malformed() {
	tp := a.tp()
	kind := a.rnd.Intn(5)
	var req kmsg.Request
	var codes func(kmsg.Response) []int16
	switch kind {
	case 0:
		m := kmsg.NewPtrFetchRequest()
		m.ReplicaID, m.MaxBytes, m.SessionEpoch = -1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = tp.Topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = -3, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		m.Topics = append(m.Topics, rt)
		req, codes = m, func(r kmsg.Response) (out []int16) {
			for _, t := range r.(*kmsg.FetchResponse).Topics {
				for _, p := range t.Partitions {
					out = append(out, p.ErrorCode)
				}
			}
			return out
		}
	case 1:
		m := kmsg.NewPtrListOffsetsRequest()
		m.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = tp.Topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = tp.Partition, -7
		rt.Partitions = append(rt.Partitions, rp)
		m.Topics = append(m.Topics, rt)
		req, codes = m, func(r kmsg.Response) (out []int16) {
			for _, t := range r.(*kmsg.ListOffsetsResponse).Topics {
				for _, p := range t.Partitions {
					out = append(out, p.ErrorCode)
				}
			}
			return out
		}
	case 2:
		m := kmsg.NewPtrDeleteRecordsRequest()
		m.TimeoutMillis = int32(a.timeout())
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = tp.Topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = tp.Partition, -5
		rt.Partitions = append(rt.Partitions, rp)
		m.Topics = append(m.Topics, rt)
		req, codes = m, func(r kmsg.Response) (out []int16) {
			for _, t := range r.(*kmsg.DeleteRecordsResponse).Topics {
				for _, p := range t.Partitions {
					out = append(out, p.ErrorCode)
				}
			}
			return out
		}
	case 3:
		m := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceType(9), tp.Topic
		m.Resources = append(m.Resources, res)
		req, codes = m, func(r kmsg.Response) (out []int16) {
			for _, rr := range r.(*kmsg.DescribeConfigsResponse).Resources {
				out = append(out, rr.ErrorCode)
			}
			return out
		}
	default:
		m := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = [16]byte{0xde, 0xad, byte(a.rnd.Intn(256)), 1}
		m.Topics = append(m.Topics, rt)
		req, codes = m, func(r kmsg.Response) (out []int16) {
			for _, t := range r.(*kmsg.MetadataResponse).Topics {
				out = append(out, t.ErrorCode)
			}
			return out
		}
	}
	version := a.vers[req.Key()]
	switch kind {
	case 0:
		version = 12
	case 4:
		version = 12 // topics by id (v10+)
	}
	a.sendAt(req, version, func(r kmsg.Response, err error) {
		if err == nil {
			for _, code := range codes(r) {
				a.code("malformed", code)
				if code == 0 {
					a.failf("malformed request %s (kind %d) was answered without error",
						kmsg.NameForKey(req.Key()), kind)
				}
			}
		}
		a.next(err)
	})
}

// sendAnswered sends req at version (the client's negotiated one when negative), hands
// a response to answer and moves on to the next step either way.
func (a *auditor) sendAnswered(req kmsg.Request, version int16, answer func(kmsg.Response)) {
	if version < 0 {
		version = a.vers[req.Key()]
	}
	a.sendAt(req, version, func(r kmsg.Response, err error) {
		if err == nil {
			answer(r)
		}
		a.next(err)
	})
}
