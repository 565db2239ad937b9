package broker

// Authorization of the group APIs (authorize.go): READ on the group to join, sync,
// heartbeat, leave and commit; DESCRIBE to describe it, find its coordinator and fetch
// its offsets; DELETE to delete it or its offsets. Offsets of a topic need READ
// (commit) or DESCRIBE (fetch) on the topic. ListGroups lists every group with
// DESCRIBE on the cluster, else the groups the principal may DESCRIBE.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/acl"
)

func (b *Broker) allowedGroup(r Request, op acl.Operation, g string) bool {
	return b.allowed(r, op, acl.ResourceGroup, g)
}

// authorizeGroupRequest authorizes the group APIs' items; false when r is not one.
func (b *Broker) authorizeGroupRequest(r Request) bool {
	switch m := r.Msg.(type) {
	case *kmsg.OffsetCommitRequest:
		b.authorizeOffsetCommit(r, m)
	case *kmsg.OffsetFetchRequest:
		b.fixLater(r, func(resp kmsg.Response) {
			b.filterOffsetFetch(r, m, resp.(*kmsg.OffsetFetchResponse))
		})
	case *kmsg.DescribeGroupsRequest:
		b.fixLater(r, func(resp kmsg.Response) {
			dr := resp.(*kmsg.DescribeGroupsResponse)
			for i := range dr.Groups {
				g := &dr.Groups[i]
				if !b.allowedGroup(r, acl.OpDescribe, g.Group) {
					*g = kmsg.NewDescribeGroupsResponseGroup()
					g.Group, g.ErrorCode = dr.Groups[i].Group, kerr.GroupAuthorizationFailed.Code
				}
			}
		})
	case *kmsg.ListGroupsRequest:
		if !b.allowedCluster(r, acl.OpDescribe) {
			b.fixLater(r, func(resp kmsg.Response) {
				lr := resp.(*kmsg.ListGroupsResponse)
				out := lr.Groups[:0]
				for _, g := range lr.Groups {
					if b.allowedGroup(r, acl.OpDescribe, g.Group) {
						out = append(out, g)
					}
				}
				lr.Groups = out
			})
		}
	case *kmsg.DeleteGroupsRequest:
		b.authorizeDeleteGroups(r, m)
	case *kmsg.FindCoordinatorRequest:
		b.fixLater(r, func(resp kmsg.Response) {
			b.filterFindCoordinator(r, m, resp.(*kmsg.FindCoordinatorResponse))
		})
	default:
		return false
	}
	return true
}

func (b *Broker) authorizeOffsetCommit(r Request, m *kmsg.OffsetCommitRequest) {
	keep, refused := splitBy(m.Topics, func(t kmsg.OffsetCommitRequestTopic) bool {
		return b.allowedTopic(r, acl.OpRead, t.Topic)
	})
	if len(refused) == 0 {
		return
	}
	m.Topics = keep
	b.fixLater(r, func(resp kmsg.Response) {
		cr := resp.(*kmsg.OffsetCommitResponse)
		for _, t := range refused {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			cr.Topics = append(cr.Topics, rt)
		}
	})
}

// filterOffsetFetch answers a group r may not DESCRIBE GROUP_AUTHORIZATION_FAILED, and
// hides the offsets of topics it may not DESCRIBE (left out of a fetch of every
// topic, TOPIC_AUTHORIZATION_FAILED when named).
func (b *Broker) filterOffsetFetch(r Request, m *kmsg.OffsetFetchRequest,
	resp *kmsg.OffsetFetchResponse) {
	if m.Version < 8 {
		if !b.allowedGroup(r, acl.OpDescribe, m.Group) {
			resp.Topics, resp.ErrorCode = nil, kerr.GroupAuthorizationFailed.Code
			if m.Version < 2 { // no top-level error: on every partition asked
				resp.Topics = offsetFetchRefused(m.Topics, kerr.GroupAuthorizationFailed.Code)
			}
			return
		}
		resp.Topics = b.filterOffsetTopics(r, m.Topics == nil, resp.Topics)
		return
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if !b.allowedGroup(r, acl.OpDescribe, g.Group) {
			g.Topics, g.ErrorCode = nil, kerr.GroupAuthorizationFailed.Code
			continue
		}
		all := true
		for _, rg := range m.Groups {
			if rg.Group == g.Group && rg.Topics != nil {
				all = false
			}
		}
		g.Topics = nestTopics(b.filterOffsetTopics(r, all, flatTopics(g.Topics)))
	}
}

func offsetFetchRefused(ts []kmsg.OffsetFetchRequestTopic,
	code int16) []kmsg.OffsetFetchResponseTopic {
	var out []kmsg.OffsetFetchResponseTopic
	for _, t := range ts {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.Offset = p, code, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

func (b *Broker) filterOffsetTopics(r Request, all bool,
	ts []kmsg.OffsetFetchResponseTopic) []kmsg.OffsetFetchResponseTopic {
	out := ts[:0]
	for _, t := range ts {
		if b.allowedTopic(r, acl.OpDescribe, t.Topic) {
			out = append(out, t)
			continue
		}
		if all {
			continue
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			p.ErrorCode, p.Offset, p.Metadata = kerr.TopicAuthorizationFailed.Code, -1, nil
		}
		out = append(out, t)
	}
	return out
}

// flatTopics and nestTopics convert v8's per-group topics to and from the v0-v7
// shape (the same fields), so that one filter serves both.
func flatTopics(ts []kmsg.OffsetFetchResponseGroupTopic) []kmsg.OffsetFetchResponseTopic {
	out := make([]kmsg.OffsetFetchResponseTopic, len(ts))
	for i, t := range ts {
		out[i].Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p.Partition, p.Offset, p.LeaderEpoch
			rp.Metadata, rp.ErrorCode = p.Metadata, p.ErrorCode
			out[i].Partitions = append(out[i].Partitions, rp)
		}
	}
	return out
}

func nestTopics(ts []kmsg.OffsetFetchResponseTopic) []kmsg.OffsetFetchResponseGroupTopic {
	out := make([]kmsg.OffsetFetchResponseGroupTopic, len(ts))
	for i, t := range ts {
		out[i].Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p.Partition, p.Offset, p.LeaderEpoch
			rp.Metadata, rp.ErrorCode = p.Metadata, p.ErrorCode
			out[i].Partitions = append(out[i].Partitions, rp)
		}
	}
	return out
}

func (b *Broker) authorizeDeleteGroups(r Request, m *kmsg.DeleteGroupsRequest) {
	keep, refused := splitBy(m.Groups, func(g string) bool {
		return b.allowedGroup(r, acl.OpDelete, g)
	})
	if len(refused) == 0 {
		return
	}
	m.Groups = keep
	b.fixLater(r, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DeleteGroupsResponse)
		for _, g := range refused {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			dr.Groups = append(dr.Groups, rg)
		}
	})
}

// filterFindCoordinator: DESCRIBE on the group or transactional id each key names.
func (b *Broker) filterFindCoordinator(r Request, m *kmsg.FindCoordinatorRequest,
	resp *kmsg.FindCoordinatorResponse) {
	t, code := acl.ResourceGroup, kerr.GroupAuthorizationFailed.Code
	if m.CoordinatorType == 1 {
		t, code = acl.ResourceTransactionalID, kerr.TransactionalIDAuthorizationFailed.Code
	}
	if m.Version < 4 {
		if !b.allowed(r, acl.OpDescribe, t, m.CoordinatorKey) {
			resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = code, -1, "", -1
		}
		return
	}
	for i := range resp.Coordinators {
		c := &resp.Coordinators[i]
		if !b.allowed(r, acl.OpDescribe, t, c.Key) {
			c.ErrorCode, c.NodeID, c.Host, c.Port, c.ErrorMessage = code, -1, "", -1, nil
		}
	}
}
