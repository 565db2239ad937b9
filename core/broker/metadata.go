package broker

// Metadata (key 3), versions 0–12.
//
// Lists the live brokers (this node alone without registrations), the cluster id, the
// controller (the metadata quorum's leader) and the requested topics. A partition of an
// assigned topic is reported from the image: leader, leader epoch, replicas, ISR and
// offline replicas, LEADER_NOT_AVAILABLE without a leader (assignedPartitionMetadata).
// The rest of this comment is about unassigned topics. Topics: all of them when Topics is null (v1+) or empty (v0 only), none when it is an
// empty list (v1+). Topics may be named or, from v10, given by topic ID (unknown ID →
// UNKNOWN_TOPIC_ID). Every partition is led by this node at leader epoch 0 with replicas
// and ISR [this node]; a partition whose log failed to open is reported with
// KAFKA_STORAGE_ERROR, leader -1 and this node as offline replica, and one whose log is
// still to be opened (a big creation in progress, open_queue.go) with
// LEADER_NOT_AVAILABLE, leader -1 and an empty ISR.
//
// Unknown named topics are created when auto.create.topics.enable is on and the client
// allows it (always before v4, AllowAutoTopicCreation from v4) with num.partitions and
// default.replication.factor. The reply waits for the creation to commit, so the new
// topic is returned ready to use rather than with LEADER_NOT_AVAILABLE. Auto-creation is
// bounded (limits.go, docs/limits.md): at most
// sluice.auto.create.topics.max.per.request topics per request, and partitions at
// sluice.auto.create.partitions.per.sec (a token bucket on the broker's clock, burst of
// one second). Topics past either bound are not created and answered
// LEADER_NOT_AVAILABLE, as Kafka answers a topic whose creation it has not finished:
// every client retries that (the Java producer until max.block.ms, franz-go and
// librdkafka without giving up on the topic as they may on UNKNOWN_TOPIC_OR_PARTITION),
// and the retry creates it once there is room. Names that are not legal topic names get
// INVALID_TOPIC_EXCEPTION; other unknown topics get UNKNOWN_TOPIC_OR_PARTITION.
// With a metadata quorum the controller places an auto-created topic; a node that is not
// the active controller forwards the creation to the controller's node as a CreateTopics
// and answers the topic LEADER_NOT_AVAILABLE at once (controller_port.go).
// Authorized-operations fields keep their "not provided" default.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

func (b *Broker) handleMetadata(r Request, m *kmsg.MetadataRequest) {
	if len(b.autoCreatable(r, m)) == 0 {
		b.reply(r, b.metadataResponse(r.Listener, m, nil))
		return
	}
	if b.notController() { // the controller's node creates them (controller_port.go)
		b.reply(r, b.metadataResponse(r.Listener, m, b.autoCreateElsewhere(r, m)))
		return
	}
	b.serialize(&opAutoCreate{adminBase: adminBase{req: r}, m: m})
}

// topicError is a per-topic failure carried from a creation attempt into a response.
type topicError struct {
	code int16
	msg  string
}

// autoCreatable returns the distinct requested topic names that do not exist and would
// be created by this request (r's principal may CREATE them), in request order.
func (n *node) autoCreatable(r Request, m *kmsg.MetadataRequest) []string {
	lim := n.cfg.Limits
	if !n.cfg.AutoCreateTopics || (m.Version >= 4 && !m.AllowAutoTopicCreation) ||
		lim.AutoCreateTopicsPerRequest == 0 || lim.AutoCreatePartitionsPerSec == 0 {
		return nil // a bound of 0 is auto-creation off: UNKNOWN_TOPIC_OR_PARTITION
	}
	var names []string
	seen := map[string]bool{}
	for _, t := range m.Topics {
		if t.Topic == nil || seen[*t.Topic] {
			continue
		}
		name := *t.Topic
		seen[name] = true
		if n.image.Topic(name) == nil && topicNameProblem(name) == "" &&
			n.mayCreateTopic(r, name) { // else UNKNOWN_TOPIC_OR_PARTITION (authorize.go)
			names = append(names, name)
		}
	}
	return names
}

func (b *Broker) metadataResponse(listener string, m *kmsg.MetadataRequest,
	failed map[string]topicError) *kmsg.MetadataResponse {
	resp := m.ResponseKind().(*kmsg.MetadataResponse)
	for _, v := range b.liveBrokers(listener) {
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID, br.Host, br.Port = v.id, v.host, v.port
		if v.rack != "" {
			br.Rack = strp(v.rack)
		}
		resp.Brokers = append(resp.Brokers, br)
	}
	resp.ClusterID = strp(b.clusterID())
	resp.ControllerID = b.controllerID()

	allTopics := m.Topics == nil || (m.Version == 0 && len(m.Topics) == 0)
	if allTopics {
		for _, name := range b.image.TopicNames() {
			resp.Topics = append(resp.Topics, b.topicMetadata(b.image.Topic(name)))
		}
		return resp
	}
	seenName := map[string]bool{}
	seenID := map[[16]byte]bool{}
	for _, rt := range m.Topics {
		if rt.Topic == nil {
			if !seenID[rt.TopicID] {
				seenID[rt.TopicID] = true
				resp.Topics = append(resp.Topics, b.topicMetadataByID(rt.TopicID))
			}
			continue
		}
		if !seenName[*rt.Topic] {
			seenName[*rt.Topic] = true
			resp.Topics = append(resp.Topics, b.topicMetadataByName(*rt.Topic, failed))
		}
	}
	return resp
}

func (b *Broker) topicMetadataByName(name string,
	failed map[string]topicError) kmsg.MetadataResponseTopic {
	if t := b.image.Topic(name); t != nil {
		return b.topicMetadata(t)
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = strp(name)
	switch {
	case topicNameProblem(name) != "":
		mt.ErrorCode = kerr.InvalidTopicException.Code
	case failed[name].code != 0:
		mt.ErrorCode = failed[name].code
	default:
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
	}
	return mt
}

func (b *Broker) topicMetadataByID(id [16]byte) kmsg.MetadataResponseTopic {
	if t := b.image.TopicByID(id); t != nil && id != [16]byte{} {
		return b.topicMetadata(t)
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.TopicID = id
	mt.ErrorCode = kerr.UnknownTopicID.Code
	return mt
}

// topicMetadata describes an existing topic, partitions in order.
func (b *Broker) topicMetadata(t *meta.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = strp(t.Name)
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	mt.Partitions = make([]kmsg.MetadataResponseTopicPartition, 0, t.Partitions)
	us := b.cfg.NodeID
	for p := int32(0); p < t.Partitions; p++ {
		if t.States != nil {
			mt.Partitions = append(mt.Partitions, b.assignedPartitionMetadata(t, p))
			continue
		}
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		mp.LeaderEpoch = leaderEpoch
		mp.Replicas = []int32{us}
		mp.OfflineReplicas = []int32{}
		tp := core.TopicPartition{Topic: t.Name, Partition: p}
		switch {
		case b.opening(tp): // created, its log not open yet (open_queue.go)
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			mp.Leader = -1
			mp.ISR = []int32{}
		case b.replicas[tp] == nil:
			mp.ErrorCode = kerr.KafkaStorageError.Code
			mp.Leader = -1
			mp.ISR = []int32{}
			mp.OfflineReplicas = []int32{us}
		default:
			mp.Leader = us
			mp.ISR = []int32{us}
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// assignedPartitionMetadata describes partition p of an assigned topic from the image:
// its leader, leader epoch, replicas and ISR; replicas on brokers that are not live
// (fenced or unregistered, when brokers are registered) and this node's own replica when
// its log did not open are offline. No leader → LEADER_NOT_AVAILABLE; a leader here
// whose log is still opening → LEADER_NOT_AVAILABLE, one whose log did not open →
// KAFKA_STORAGE_ERROR.
func (b *Broker) assignedPartitionMetadata(t *meta.Topic,
	p int32) kmsg.MetadataResponseTopicPartition {
	s := t.States[p]
	tp := core.TopicPartition{Topic: t.Name, Partition: p}
	mp := kmsg.NewMetadataResponseTopicPartition()
	mp.Partition, mp.Leader, mp.LeaderEpoch = p, s.Leader, s.LeaderEpoch
	mp.Replicas = slices.Clone(s.Replicas)
	mp.ISR = slices.Clone(s.ISR)
	mp.OfflineReplicas = []int32{}
	registered := len(b.image.Brokers()) > 0
	_, failed := b.openErrs[tp]
	for _, id := range s.Replicas {
		br, ok := b.image.Broker(id)
		down := registered && (!ok || br.State == meta.BrokerFenced)
		if (id != b.cfg.NodeID && down) || (id == b.cfg.NodeID && failed) {
			mp.OfflineReplicas = append(mp.OfflineReplicas, id)
		}
	}
	switch {
	case s.Leader == meta.NoLeader:
		mp.ErrorCode = kerr.LeaderNotAvailable.Code
	case s.Leader == b.cfg.NodeID && b.opening(tp):
		mp.ErrorCode, mp.Leader = kerr.LeaderNotAvailable.Code, -1
	case s.Leader == b.cfg.NodeID && b.replicas[tp] == nil:
		mp.ErrorCode, mp.Leader = kerr.KafkaStorageError.Code, -1
	}
	return mp
}
