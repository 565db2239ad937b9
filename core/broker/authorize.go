package broker

// Authorization: every request is checked against the ACLs of the image before (or,
// for reads, after) its handler runs, when the authorizer is on (authorizer.class.name;
// off, nothing here runs and every request is served as before).
//
// Three shapes, by what a request does:
//   - one resource decides the whole request (JoinGroup: READ on its group; CreateAcls:
//     ALTER on the cluster): refused whole with the API's error code before the
//     handler runs (denyWhole);
//   - a request that changes many resources (Produce, CreateTopics, OffsetCommit...):
//     the items refused are taken out of the request before the handler runs, and put
//     back in the response with their error when it is answered (a "fix" kept per
//     request until reply, node.reply);
//   - a request that reads (Metadata, DescribeConfigs, OffsetFetch...): the handler
//     runs, then the answer is filtered: what the principal may not describe is
//     replaced by an error, or left out of a listing.
//
// The decision is made on this node's image when the request arrives: an ACL change
// is effective on a node from the step that applies its record, so a client answered
// "deleted" by DeleteAcls is refused by that node at its next request. Operations per
// API are Kafka's (docs/security.md "ACLs").

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/acl"
)

// authzState is the authorizer and the fixes to apply to answers not sent yet.
type authzState struct {
	a     *acl.Authorizer
	fixes map[uint64]authzFix
	stale *acl.Set // the mutant authorize-stale-acls's cache (aclSet)
}

// authzFix completes the answer to request id of connection conn.
type authzFix struct {
	conn  uint64
	apply func(kmsg.Response)
}

// authorizer returns the authorizer of the settings, built at first use.
func (n *node) authorizer() *acl.Authorizer {
	if n.authz.a == nil {
		n.authz.a = n.cfg.Authz.authorizer()
	}
	return n.authz.a
}

// allowed says whether r's principal may do op on the resource; true when the
// authorizer is off.
func (n *node) allowed(r Request, op acl.Operation, t acl.ResourceType, name string) bool {
	if !n.cfg.Authz.Enabled {
		return true
	}
	if n.authorizer().Authorize(n.aclSet(), acl.Who{Principal: r.Principal, Host: r.Host}, op,
		t, name) {
		return true
	}
	n.lg.Debug("request denied", zap.String("principal", r.Principal),
		zap.String("host", r.Host), zap.Stringer("operation", op),
		zap.Stringer("resource_type", t), zap.String("resource", name),
		zap.Int16("api_key", r.Msg.Key()))
	return false
}

// aclSet is the bindings requests are decided on: the image's.
func (n *node) aclSet() *acl.Set {
	if mutantOn("authorize-stale-acls") {
		// The planted bug: a cache of the bindings that learns creations but never
		// deletions, so a revoked principal keeps its rights.
		if n.authz.stale == nil {
			n.authz.stale = acl.NewSet()
		}
		for _, b := range n.image.ACLs().Sorted() {
			n.authz.stale.Add(b)
		}
		return n.authz.stale
	}
	return n.image.ACLs()
}

func (n *node) allowedCluster(r Request, op acl.Operation) bool {
	return n.allowed(r, op, acl.ResourceCluster, acl.ClusterName)
}

func (n *node) allowedTopic(r Request, op acl.Operation, topic string) bool {
	return n.allowed(r, op, acl.ResourceTopic, topic)
}

// mayCreateTopic: CREATE on the cluster or on the topic (auto-creation, CreateTopics).
func (n *node) mayCreateTopic(r Request, topic string) bool {
	if !n.cfg.Authz.Enabled {
		return true
	}
	return n.allowedCluster(r, acl.OpCreate) || n.allowedTopic(r, acl.OpCreate, topic)
}

// AuthorizedClusterAction says whether r's principal may do CLUSTER_ACTION on the
// cluster: the controller RPCs a node host serves (core/nodehost) need it. True with
// the authorizer off.
func (b *Broker) AuthorizedClusterAction(r Request) bool {
	return b.allowedCluster(r, acl.OpClusterAction)
}

// AuthorizedClusterDescribe says whether r's principal may DESCRIBE the cluster: the
// node answers DescribeQuorum itself (runtime), and Kafka asks that of it. True with
// the authorizer off.
func (b *Broker) AuthorizedClusterDescribe(r Request) bool {
	return b.allowedCluster(r, acl.OpDescribe)
}

// fixLater registers f to complete r's answer (after any fix registered before).
func (n *node) fixLater(r Request, f func(kmsg.Response)) {
	if n.authz.fixes == nil {
		n.authz.fixes = map[uint64]authzFix{}
	}
	if prev, ok := n.authz.fixes[r.ID]; ok {
		g := prev.apply
		f0 := f
		f = func(resp kmsg.Response) { g(resp); f0(resp) }
	}
	n.authz.fixes[r.ID] = authzFix{conn: r.Conn, apply: f}
}

// fixAnswer applies and forgets r's fix, if any (node.reply).
func (n *node) fixAnswer(r Request, resp kmsg.Response) {
	if len(n.authz.fixes) == 0 {
		return
	}
	f, ok := n.authz.fixes[r.ID]
	if !ok {
		return
	}
	delete(n.authz.fixes, r.ID)
	if resp != nil {
		f.apply(resp)
	}
}

// authzConnClosed drops the fixes of a connection's requests: they will not be
// answered.
func (n *node) authzConnClosed(conn uint64) {
	for id, f := range n.authz.fixes {
		if f.conn == conn {
			delete(n.authz.fixes, id)
		}
	}
}

// authorizeRequest checks r before it is routed: false when r was answered (refused
// whole). It may take refused items out of r.Msg and register their answers.
func (b *Broker) authorizeRequest(r Request) bool {
	if !b.cfg.Authz.Enabled {
		return true
	}
	if code, ok := b.wholeRequest(r); !ok {
		b.reply(r, denyWhole(r.Msg, code))
		return false
	}
	switch m := r.Msg.(type) {
	case *kmsg.ProduceRequest:
		b.authorizeProduce(r, m)
	case *kmsg.ListOffsetsRequest:
		b.authorizeListOffsets(r, m)
	case *kmsg.MetadataRequest:
		b.fixLater(r, func(resp kmsg.Response) {
			b.filterMetadata(r, m, resp.(*kmsg.MetadataResponse))
		})
	case *kmsg.OffsetForLeaderEpochRequest:
		b.fixLater(r, func(resp kmsg.Response) {
			b.filterLeaderEpochs(r, m, resp.(*kmsg.OffsetForLeaderEpochResponse))
		})
	case *kmsg.DeleteRecordsRequest:
		b.authorizeDeleteRecords(r, m)
	default:
		if !b.authorizeGroupRequest(r) {
			b.authorizeAdminRequest(r)
		}
	}
	return true
}

// wholeRequest checks the APIs one resource decides: the error code to refuse r
// with, and false, when it is refused.
func (b *Broker) wholeRequest(r Request) (int16, bool) {
	cluster := func(op acl.Operation) (int16, bool) {
		return kerr.ClusterAuthorizationFailed.Code, b.allowedCluster(r, op)
	}
	group := func(op acl.Operation, g string) (int16, bool) {
		return kerr.GroupAuthorizationFailed.Code, b.allowed(r, op, acl.ResourceGroup, g)
	}
	switch m := r.Msg.(type) {
	case *kmsg.FetchRequest:
		if m.ReplicaID >= 0 {
			return cluster(acl.OpClusterAction)
		}
	case *kmsg.EnvelopeRequest: // from a peer, which authorized its client (envelope.go)
		return cluster(acl.OpClusterAction)
	case *kmsg.CreateACLsRequest, *kmsg.DeleteACLsRequest,
		*kmsg.AlterUserSCRAMCredentialsRequest, *kmsg.AlterPartitionAssignmentsRequest,
		*kmsg.ElectLeadersRequest:
		return cluster(acl.OpAlter)
	case *kmsg.DescribeACLsRequest, *kmsg.DescribeUserSCRAMCredentialsRequest,
		*kmsg.ListPartitionReassignmentsRequest, *kmsg.DescribeLogDirsRequest:
		return cluster(acl.OpDescribe)
	case *kmsg.UnregisterBrokerRequest:
		// ALTER, or CLUSTER_ACTION: a peer forwarding its client's request, which it
		// authorized, to the controller's node (unregister_broker.go).
		if code, ok := cluster(acl.OpClusterAction); ok {
			return code, ok
		}
		return cluster(acl.OpAlter)
	case *kmsg.AlterClientQuotasRequest:
		return cluster(acl.OpAlterConfigs)
	case *kmsg.DescribeClientQuotasRequest:
		return cluster(acl.OpDescribeConfigs)
	case *kmsg.InitProducerIDRequest:
		return b.authorizeInitProducerID(r, m)
	case *kmsg.JoinGroupRequest:
		return group(acl.OpRead, m.Group)
	case *kmsg.SyncGroupRequest:
		return group(acl.OpRead, m.Group)
	case *kmsg.HeartbeatRequest:
		return group(acl.OpRead, m.Group)
	case *kmsg.LeaveGroupRequest:
		return group(acl.OpRead, m.Group)
	case *kmsg.OffsetCommitRequest:
		return group(acl.OpRead, m.Group)
	case *kmsg.OffsetDeleteRequest:
		return group(acl.OpDelete, m.Group)
	}
	return 0, true
}

// authorizeInitProducerID: a transactional producer needs WRITE on its transactional
// id; an idempotent one IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
// (KIP-679).
func (b *Broker) authorizeInitProducerID(r Request, m *kmsg.InitProducerIDRequest) (int16,
	bool) {
	if m.TransactionalID != nil {
		return kerr.TransactionalIDAuthorizationFailed.Code,
			b.allowed(r, acl.OpWrite, acl.ResourceTransactionalID, *m.TransactionalID)
	}
	if b.allowedCluster(r, acl.OpIdempotentWrite) {
		return 0, true
	}
	ok := b.authorizer().AuthorizeAnyOfType(b.image.ACLs(),
		acl.Who{Principal: r.Principal, Host: r.Host}, acl.OpWrite, acl.ResourceTopic)
	return kerr.ClusterAuthorizationFailed.Code, ok
}

// authorizeProduce takes out the topics r may not WRITE (all of them without WRITE on
// its transactional id) and answers their partitions TOPIC_AUTHORIZATION_FAILED
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
func (b *Broker) authorizeProduce(r Request, m *kmsg.ProduceRequest) {
	txnOK := m.TransactionID == nil ||
		b.allowed(r, acl.OpWrite, acl.ResourceTransactionalID, *m.TransactionID)
	keep, refused := splitBy(m.Topics, func(t kmsg.ProduceRequestTopic) bool {
		return txnOK && b.allowedTopic(r, acl.OpWrite, t.Topic)
	})
	if len(refused) == 0 {
		return
	}
	m.Topics = keep
	code := kerr.TopicAuthorizationFailed.Code
	if !txnOK {
		code = kerr.TransactionalIDAuthorizationFailed.Code
	}
	if m.Acks == 0 {
		return // nothing is answered
	}
	b.fixLater(r, func(resp kmsg.Response) {
		pr := resp.(*kmsg.ProduceResponse)
		for _, t := range refused {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.BaseOffset = p.Partition, code, -1
				rp.LogAppendTime, rp.LogStartOffset = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			pr.Topics = append(pr.Topics, rt)
		}
	})
}

// authorizeFetch takes out of a consumer's fetch (its session's partitions included)
// the topics it may not READ; their partitions are answered TOPIC_AUTHORIZATION_FAILED.
// It returns the request to serve (m itself when nothing is refused).
func (rm *replicaManager) authorizeFetch(r Request, m *kmsg.FetchRequest) *kmsg.FetchRequest {
	if !rm.cfg.Authz.Enabled || m.ReplicaID >= 0 {
		return m
	}
	keep, refused := splitBy(m.Topics, func(t kmsg.FetchRequestTopic) bool {
		return rm.allowedTopic(r, acl.OpRead, t.Topic)
	})
	if len(refused) == 0 {
		return m
	}
	cp := *m
	cp.Topics = keep
	rm.fixLater(r, func(resp kmsg.Response) {
		fr := resp.(*kmsg.FetchResponse)
		for _, t := range refused {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			fr.Topics = append(fr.Topics, rt)
		}
	})
	return &cp
}

// authorizeListOffsets takes out the topics r may not DESCRIBE.
func (b *Broker) authorizeListOffsets(r Request, m *kmsg.ListOffsetsRequest) {
	if m.ReplicaID >= 0 && b.allowedCluster(r, acl.OpClusterAction) {
		// A follower answered OFFSET_OUT_OF_RANGE asks its leader's log end this way
		// (fetcher_answers.go): like its fetches and OffsetForLeaderEpoch, CLUSTER_ACTION
		// decides, not DESCRIBE on each topic, which no ACL need give the inter-broker
		// principal (found by the simulator's ACL workload: a follower stuck for ever).
		return
	}
	keep, refused := splitBy(m.Topics, func(t kmsg.ListOffsetsRequestTopic) bool {
		return b.allowedTopic(r, acl.OpDescribe, t.Topic)
	})
	if len(refused) == 0 {
		return
	}
	m.Topics = keep
	b.fixLater(r, func(resp kmsg.Response) {
		lr := resp.(*kmsg.ListOffsetsResponse)
		for _, t := range refused {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rp.Timestamp, rp.Offset = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			lr.Topics = append(lr.Topics, rt)
		}
	})
}

// authorizeDeleteRecords takes out the topics r may not DELETE.
func (b *Broker) authorizeDeleteRecords(r Request, m *kmsg.DeleteRecordsRequest) {
	keep, refused := splitBy(m.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool {
		return b.allowedTopic(r, acl.OpDelete, t.Topic)
	})
	if len(refused) == 0 {
		return
	}
	m.Topics = keep
	b.fixLater(r, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DeleteRecordsResponse)
		for _, t := range refused {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
				rp.LowWatermark = -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			dr.Topics = append(dr.Topics, rt)
		}
	})
}

// filterMetadata hides from a Metadata answer the topics r may not DESCRIBE: left out
// of a listing of every topic, answered TOPIC_AUTHORIZATION_FAILED when named. Topics
// the request could create without CREATE were not created (autoCreatable).
func (b *Broker) filterMetadata(r Request, m *kmsg.MetadataRequest,
	resp *kmsg.MetadataResponse) {
	all := m.Topics == nil || (m.Version == 0 && len(m.Topics) == 0)
	out := resp.Topics[:0]
	for _, t := range resp.Topics {
		if t.Topic == nil || b.allowedTopic(r, acl.OpDescribe, *t.Topic) {
			out = append(out, t)
			continue
		}
		if all {
			continue
		}
		d := kmsg.NewMetadataResponseTopic()
		d.Topic, d.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		out = append(out, d)
	}
	resp.Topics = out
}

// filterLeaderEpochs: a follower needs CLUSTER_ACTION, a client DESCRIBE per topic.
func (b *Broker) filterLeaderEpochs(r Request, m *kmsg.OffsetForLeaderEpochRequest,
	resp *kmsg.OffsetForLeaderEpochResponse) {
	clusterOK := m.ReplicaID < 0 || b.allowedCluster(r, acl.OpClusterAction)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if clusterOK && (m.ReplicaID >= 0 || b.allowedTopic(r, acl.OpDescribe, t.Topic)) {
			continue
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			p.ErrorCode, p.LeaderEpoch, p.EndOffset = kerr.TopicAuthorizationFailed.Code, -1, -1
		}
	}
}

// splitBy splits items into those ok keeps and the rest, in order: a request's parts
// the principal may act on, and the refused ones answered beside them.
func splitBy[T any](items []T, ok func(T) bool) (keep, refused []T) {
	for _, it := range items {
		if ok(it) {
			keep = append(keep, it)
		} else {
			refused = append(refused, it)
		}
	}
	return keep, refused
}
