package broker

// Authorization of the topic and config admin APIs (authorize.go): CreateTopics needs
// CREATE on the cluster or the topic, DeleteTopics DELETE on the topic,
// CreatePartitions ALTER on it; AlterConfigs and IncrementalAlterConfigs ALTER_CONFIGS
// and DescribeConfigs DESCRIBE_CONFIGS on the topic (or on the cluster for a broker's
// configs); DescribeProducers READ on the topic. And denyWhole, the answers to requests
// refused whole.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/acl"
)

// authorizeAdminRequest authorizes the items of the topic and config admin APIs.
func (b *Broker) authorizeAdminRequest(r Request) {
	switch m := r.Msg.(type) {
	case *kmsg.CreateTopicsRequest:
		b.authorizeCreateTopics(r, m)
	case *kmsg.DeleteTopicsRequest:
		b.authorizeDeleteTopics(r, m)
	case *kmsg.CreatePartitionsRequest:
		b.authorizeCreatePartitions(r, m)
	case *kmsg.AlterConfigsRequest:
		b.authorizeAlterConfigs(r, m)
	case *kmsg.IncrementalAlterConfigsRequest:
		b.authorizeIncrementalAlterConfigs(r, m)
	case *kmsg.DescribeProducersRequest:
		b.authorizeDescribeProducers(r, m)
	case *kmsg.DescribeConfigsRequest:
		b.fixLater(r, func(resp kmsg.Response) {
			dr := resp.(*kmsg.DescribeConfigsResponse)
			for i := range dr.Resources {
				res := &dr.Resources[i]
				if code := b.configAccess(r, acl.OpDescribeConfigs, res.ResourceType,
					res.ResourceName); code != 0 {
					res.ErrorCode, res.ErrorMessage, res.Configs = code, nil, nil
				}
			}
		})
	}
}

// configAccess is 0 when r may do op on the configs of a resource, else the error.
func (b *Broker) configAccess(r Request, op acl.Operation, t kmsg.ConfigResourceType,
	name string) int16 {
	if t == kmsg.ConfigResourceTypeTopic {
		if b.allowedTopic(r, op, name) {
			return 0
		}
		return kerr.TopicAuthorizationFailed.Code
	}
	if b.allowedCluster(r, op) {
		return 0
	}
	return kerr.ClusterAuthorizationFailed.Code
}

func (b *Broker) authorizeCreateTopics(r Request, m *kmsg.CreateTopicsRequest) {
	var keep []kmsg.CreateTopicsRequestTopic
	var refused []string
	for _, t := range m.Topics {
		if b.mayCreateTopic(r, t.Topic) {
			keep = append(keep, t)
		} else {
			refused = append(refused, t.Topic)
		}
	}
	if len(refused) == 0 {
		return
	}
	m.Topics = keep
	b.fixLater(r, func(resp kmsg.Response) {
		cr := resp.(*kmsg.CreateTopicsResponse)
		for _, name := range refused {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = name, kerr.TopicAuthorizationFailed.Code
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			cr.Topics = append(cr.Topics, rt)
		}
	})
}

// authorizeDeleteTopics checks DELETE per topic, named (v0-v5) or by id or name (v6).
// A topic id that names no topic is left to the handler (UNKNOWN_TOPIC_ID).
func (b *Broker) authorizeDeleteTopics(r Request, m *kmsg.DeleteTopicsRequest) {
	keepNames, refusedNames := splitBy(m.TopicNames, func(n string) bool {
		return b.allowedTopic(r, acl.OpDelete, n)
	})
	keep, refused := splitBy(m.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		} else if tp := b.image.TopicByID(t.TopicID); tp != nil {
			name = tp.Name
		}
		return name == "" || b.allowedTopic(r, acl.OpDelete, name)
	})
	if len(refusedNames)+len(refused) == 0 {
		return
	}
	m.TopicNames, m.Topics = keepNames, keep
	b.fixLater(r, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DeleteTopicsResponse)
		add := func(name *string, id [16]byte) {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = name, id, kerr.TopicAuthorizationFailed.Code
			dr.Topics = append(dr.Topics, rt)
		}
		for _, n := range refusedNames {
			add(strp(n), [16]byte{})
		}
		for _, t := range refused {
			add(t.Topic, t.TopicID)
		}
	})
}

func (b *Broker) authorizeCreatePartitions(r Request, m *kmsg.CreatePartitionsRequest) {
	var keep []kmsg.CreatePartitionsRequestTopic
	var refused []string
	for _, t := range m.Topics {
		if b.allowedTopic(r, acl.OpAlter, t.Topic) {
			keep = append(keep, t)
		} else {
			refused = append(refused, t.Topic)
		}
	}
	if len(refused) == 0 {
		return
	}
	m.Topics = keep
	b.fixLater(r, func(resp kmsg.Response) {
		cr := resp.(*kmsg.CreatePartitionsResponse)
		for _, name := range refused {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = name, kerr.TopicAuthorizationFailed.Code
			cr.Topics = append(cr.Topics, rt)
		}
	})
}

// refusedConfig is a config resource refused, with its error.
type refusedConfig struct {
	t    kmsg.ConfigResourceType
	name string
	code int16
}

func (b *Broker) authorizeAlterConfigs(r Request, m *kmsg.AlterConfigsRequest) {
	var keep []kmsg.AlterConfigsRequestResource
	var refused []refusedConfig
	for _, res := range m.Resources {
		code := b.configAccess(r, acl.OpAlterConfigs, res.ResourceType, res.ResourceName)
		if code == 0 {
			keep = append(keep, res)
		} else {
			refused = append(refused, refusedConfig{res.ResourceType, res.ResourceName, code})
		}
	}
	if len(refused) == 0 {
		return
	}
	m.Resources = keep
	b.fixLater(r, func(resp kmsg.Response) {
		ar := resp.(*kmsg.AlterConfigsResponse)
		for _, x := range refused {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = x.t, x.name, x.code
			ar.Resources = append(ar.Resources, rr)
		}
	})
}

func (b *Broker) authorizeIncrementalAlterConfigs(r Request,
	m *kmsg.IncrementalAlterConfigsRequest) {
	var keep []kmsg.IncrementalAlterConfigsRequestResource
	var refused []refusedConfig
	for _, res := range m.Resources {
		code := b.configAccess(r, acl.OpAlterConfigs, res.ResourceType, res.ResourceName)
		if code == 0 {
			keep = append(keep, res)
		} else {
			refused = append(refused, refusedConfig{res.ResourceType, res.ResourceName, code})
		}
	}
	if len(refused) == 0 {
		return
	}
	m.Resources = keep
	b.fixLater(r, func(resp kmsg.Response) {
		ar := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for _, x := range refused {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = x.t, x.name, x.code
			ar.Resources = append(ar.Resources, rr)
		}
	})
}

// authorizeDescribeProducers takes out the topics r may not READ, as Kafka decides
// DescribeProducers; a name that is not a valid topic's stays, for the handler's
// INVALID_TOPIC_EXCEPTION, which Kafka answers before it authorizes.
func (b *Broker) authorizeDescribeProducers(r Request, m *kmsg.DescribeProducersRequest) {
	keep, refused := splitBy(m.Topics, func(t kmsg.DescribeProducersRequestTopic) bool {
		return topicNameProblem(t.Topic) != "" || b.allowedTopic(r, acl.OpRead, t.Topic)
	})
	if len(refused) == 0 {
		return
	}
	m.Topics = keep
	b.fixLater(r, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DescribeProducersResponse)
		for _, t := range refused {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.TopicAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		}
	})
}

// denyWhole is the answer to a request refused whole with code (wholeRequest).
func denyWhole(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch m := req.(type) {
	case *kmsg.FetchRequest:
		resp.(*kmsg.FetchResponse).ErrorCode = code
	case *kmsg.EnvelopeRequest:
		resp.(*kmsg.EnvelopeResponse).ErrorCode = code
	case *kmsg.CreateACLsRequest:
		cr := resp.(*kmsg.CreateACLsResponse)
		for range m.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = code
			cr.Results = append(cr.Results, res)
		}
	case *kmsg.DeleteACLsRequest:
		dr := resp.(*kmsg.DeleteACLsResponse)
		for range m.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = code
			dr.Results = append(dr.Results, res)
		}
	case *kmsg.DescribeACLsRequest:
		resp.(*kmsg.DescribeACLsResponse).ErrorCode = code
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode = code
	case *kmsg.ElectLeadersRequest:
		resp.(*kmsg.ElectLeadersResponse).ErrorCode = code
	case *kmsg.ListPartitionReassignmentsRequest:
		resp.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode = code
	case *kmsg.DescribeLogDirsRequest:
		resp.(*kmsg.DescribeLogDirsResponse).ErrorCode = code
	case *kmsg.UnregisterBrokerRequest:
		resp.(*kmsg.UnregisterBrokerResponse).ErrorCode = code
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		ar := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
		for _, u := range scramUsers(m) {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = u, code
			ar.Results = append(ar.Results, res)
		}
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		resp.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode = code
	case *kmsg.AlterClientQuotasRequest:
		ar := resp.(*kmsg.AlterClientQuotasResponse)
		for _, e := range m.Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			for _, p := range e.Entity {
				we := kmsg.NewAlterClientQuotasResponseEntryEntity()
				we.Type, we.Name = p.Type, p.Name
				re.Entity = append(re.Entity, we)
			}
			re.ErrorCode = code
			ar.Entries = append(ar.Entries, re)
		}
	case *kmsg.DescribeClientQuotasRequest:
		resp.(*kmsg.DescribeClientQuotasResponse).ErrorCode = code
	case *kmsg.InitProducerIDRequest:
		ir := resp.(*kmsg.InitProducerIDResponse)
		ir.ErrorCode, ir.ProducerID, ir.ProducerEpoch = code, -1, -1
	default:
		denyGroupWhole(req, resp, code)
	}
	return resp
}

// denyGroupWhole fills the answer of a group request refused whole.
func denyGroupWhole(req kmsg.Request, resp kmsg.Response, code int16) {
	switch m := req.(type) {
	case *kmsg.JoinGroupRequest:
		jr := resp.(*kmsg.JoinGroupResponse)
		jr.ErrorCode, jr.Generation = code, -1
	case *kmsg.SyncGroupRequest:
		resp.(*kmsg.SyncGroupResponse).ErrorCode = code
	case *kmsg.HeartbeatRequest:
		resp.(*kmsg.HeartbeatResponse).ErrorCode = code
	case *kmsg.LeaveGroupRequest:
		resp.(*kmsg.LeaveGroupResponse).ErrorCode = code
	case *kmsg.OffsetDeleteRequest:
		resp.(*kmsg.OffsetDeleteResponse).ErrorCode = code
	case *kmsg.OffsetCommitRequest:
		cr := resp.(*kmsg.OffsetCommitResponse)
		for _, t := range m.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			cr.Topics = append(cr.Topics, rt)
		}
	}
}

// scramUsers lists the distinct users an AlterUserScramCredentials names, in order.
func scramUsers(m *kmsg.AlterUserSCRAMCredentialsRequest) []string {
	var out []string
	seen := map[string]bool{}
	add := func(u string) {
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	for _, d := range m.Deletions {
		add(d.Name)
	}
	for _, u := range m.Upsertions {
		add(u.Name)
	}
	return out
}

// aclsField logs ACL bindings.
func aclsField(bs []acl.Binding) zap.Field {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = b.String()
	}
	return zap.Strings("acls", s)
}
