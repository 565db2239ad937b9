package broker

// CreateTopics (key 19), versions 0–7.
//
// Each topic is checked on its own, in this order, and answered in request order:
//   - named more than once in the request → INVALID_REQUEST for every occurrence;
//   - not a legal name (1–249 of [a-zA-Z0-9._-], not "." or "..") or colliding with an
//     existing or earlier topic once '.' and '_' are treated alike → INVALID_TOPIC_EXCEPTION;
//   - already exists → TOPIC_ALREADY_EXISTS;
//   - NumPartitions/ReplicationFactor set together with ReplicaAssignment → INVALID_REQUEST;
//   - NumPartitions 0, < -1 or above 10000 → INVALID_PARTITIONS (-1: num.partitions);
//   - ReplicationFactor other than 1 or -1 (default.replication.factor) →
//     INVALID_REPLICATION_FACTOR: the cluster has one broker (with a quorum: 0, below -1
//     or above the live brokers);
//   - ReplicaAssignment whose partitions are not 0..n-1 or whose replicas are not exactly
//     [this node] → INVALID_REPLICA_ASSIGNMENT (with a quorum: Kafka's checks, see
//     controller.CheckAssignment);
//   - a config that is unknown, null, repeated or invalid → INVALID_CONFIG;
//   - the node would host more than sluice.max.partitions → POLICY_VIOLATION.
//
// With a metadata quorum (controller_port.go) a node that is not the active controller
// answers every topic NOT_CONTROLLER; the controller's node validates as above, then
// the controller places the partitions and proposes the record, and its refusals
// (INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT, NOT_CONTROLLER when it lost
// leadership, REQUEST_TIMED_OUT when the record's outcome is unknown) are the topic's.
//
// A topic whose record committed but some of whose partition logs did not open is
// answered KAFKA_STORAGE_ERROR with the cause (partition_limit.go), never success.
//
// Valid topics each get one TopicCreated record with a fresh random topic ID; the reply
// waits until all of them committed and every new partition's log is open, which a big
// topic does a chunk per step (open_queue.go; the Timeout field is not needed: commits
// are local).
// ValidateOnly answers as if created without proposing anything (topic ID left zero).
// With sluice.controller.mutation.rate set (Kafka's controller_mutation_rate quota,
// KIP-599; default unlimited), a topic met while the node's partition bucket is empty
// gets THROTTLING_QUOTA_EXCEEDED (v6+) and the response a ThrottleMillis saying when
// the bucket admits again; v0–v5 requests are created and only throttled.
// From v5 a successful topic reports its partition count, replication factor and every
// topic config with its value and source; ErrorMessage is sent from v1.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

func (ctl *adminController) handleCreateTopics(r Request, m *kmsg.CreateTopicsRequest) {
	ctl.serialize(&opCreateTopics{adminBase: adminBase{req: r}, m: m})
}

func (ctl *adminController) createTopics(op *opCreateTopics) {
	m := op.m
	resp := m.ResponseKind().(*kmsg.CreateTopicsResponse)
	if ctl.notController() {
		ctl.reply(op.req, notControllerTopics(m, resp))
		ctl.adminFinished(op)
		return
	}
	counts := map[string]int{}
	for _, t := range m.Topics {
		counts[t.Topic]++
	}
	pending := newPendingTopics()
	var recs []meta.Record
	var at []int // index in resp.Topics of each record
	for i := range m.Topics {
		t := &m.Topics[i]
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		var rec meta.Record
		var code int16
		var msg string
		if counts[t.Topic] > 1 {
			code, msg = kerr.InvalidRequest.Code, fmt.Sprintf(
				"Create topics request contains multiple entries for the topic %s", t.Topic)
		} else {
			rec, code, msg = ctl.planTopic(topicSpec{name: t.Topic, partitions: t.NumPartitions,
				replicationFactor: t.ReplicationFactor, assignment: t.ReplicaAssignment,
				configs: t.Configs}, pending)
		}
		if code == 0 && !m.ValidateOnly {
			code, msg = ctl.mutationQuota(m.Version, rec.Partitions)
		}
		if code != 0 {
			rt.ErrorCode, rt.ErrorMessage = code, strp(msg)
		} else {
			ctl.describeCreated(&rt, rec)
			if !m.ValidateOnly {
				rec.TopicID = ctl.newTopicID()
				rt.TopicID = rec.TopicID
				recs = append(recs, rec)
				at = append(at, i)
				if ctl.ctlPort != nil {
					op.assign = append(op.assign, manualAssignment(t.ReplicaAssignment))
				}
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if rate := ctl.cfg.Limits.ControllerMutationRate; rate > 0 {
		resp.ThrottleMillis = int32(min(ctl.creation.admin.waitMs(ctl.now, rate), 1<<31-1))
		ctl.logThrottled(resp)
	}
	op.resp, op.at = resp, at
	ctl.proposeAll(op, recs) // then afterOpens, then createTopicsOpened
}

// createTopicsOpened answers once the records were answered and the new logs opened.
func (ctl *adminController) createTopicsOpened(op *opCreateTopics) {
	resp, recs := op.resp, op.recs
	for j, err := range op.errs {
		code, msg := int16(0), ""
		if err != nil {
			code, msg = commitFailure(err)
		} else {
			code, msg = ctl.hosts.unopened(recs[j].Topic, 0, recs[j].Partitions)
		}
		if code != 0 {
			failed := kmsg.NewCreateTopicsResponseTopic()
			failed.Topic = resp.Topics[op.at[j]].Topic
			failed.ErrorCode, failed.ErrorMessage = code, strp(msg)
			resp.Topics[op.at[j]] = failed
		}
	}
	ctl.reply(op.req, resp)
	ctl.adminFinished(op)
}

// mutationQuota meters a creation of n partitions against
// sluice.controller.mutation.rate (Kafka's controller_mutation_rate, KIP-599): from v6
// a creation while the bucket is empty gets THROTTLING_QUOTA_EXCEEDED; older versions
// do not know that error and are only told to back off through ThrottleMillis.
func (ctl *adminController) mutationQuota(version int16, n int32) (int16, string) {
	rate := ctl.cfg.Limits.ControllerMutationRate
	if rate <= 0 {
		return 0, ""
	}
	if !ctl.creation.admin.admits(ctl.now, rate) && version >= 6 {
		return kerr.ThrottlingQuotaExceeded.Code, fmt.Sprintf("The throttling quota has "+
			"been exceeded: sluice.controller.mutation.rate allows %d partitions per "+
			"second; retry after the throttle time", rate)
	}
	ctl.creation.admin.spend(n)
	return 0, ""
}

// logThrottled logs, once per request, the topics the mutation quota refused.
func (ctl *adminController) logThrottled(resp *kmsg.CreateTopicsResponse) {
	n := 0
	for _, t := range resp.Topics {
		if t.ErrorCode == kerr.ThrottlingQuotaExceeded.Code {
			n++
		}
	}
	if n > 0 || resp.ThrottleMillis > 0 {
		ctl.lg.Info("topic creation throttled", zap.Int("refused_topics", n),
			zap.Int32("throttle_ms", resp.ThrottleMillis),
			zap.Int("partitions_per_sec", ctl.cfg.Limits.ControllerMutationRate))
	}
}

// notControllerTopics answers every topic of a CreateTopics NOT_CONTROLLER: with a
// quorum, only the active controller's node creates topics (Metadata names it), and
// clients refresh their metadata and retry there.
func notControllerTopics(m *kmsg.CreateTopicsRequest,
	resp *kmsg.CreateTopicsResponse) *kmsg.CreateTopicsResponse {
	for _, t := range m.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, kerr.NotController.Code
		rt.ErrorMessage = strp("This node is not the active controller.")
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// describeCreated fills the v5+ fields of a successful creation.
func (ctl *adminController) describeCreated(rt *kmsg.CreateTopicsResponseTopic, rec meta.Record) {
	rt.NumPartitions = rec.Partitions
	rt.ReplicationFactor = rec.ReplicationFactor
	t := &meta.Topic{Name: rec.Topic, Configs: rec.Configs}
	rt.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
	for _, e := range ctl.topicConfigEntries(t) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = e.name, strp(e.value), int8(e.source)
		rt.Configs = append(rt.Configs, c)
	}
}

// topicSpec is a request to create one topic, from CreateTopics or auto-creation.
type topicSpec struct {
	name              string
	partitions        int32 // -1: num.partitions
	replicationFactor int16 // -1: default.replication.factor
	assignment        []kmsg.CreateTopicsRequestTopicReplicaAssignment
	configs           []kmsg.CreateTopicsRequestTopicConfig
}

// planTopic validates a creation against the image and the creations accepted earlier
// in the same request (pending, updated on success). It returns the TopicCreated record
// without its topic ID, or a Kafka error code and message.
func (ctl *adminController) planTopic(s topicSpec, pending *pendingTopics) (meta.Record, int16,
	string) {
	if p := topicNameProblem(s.name); p != "" {
		return meta.Record{}, kerr.InvalidTopicException.Code, p
	}
	if ctl.image.Topic(s.name) != nil {
		return meta.Record{}, kerr.TopicAlreadyExists.Code,
			fmt.Sprintf("Topic '%s' already exists.", s.name)
	}
	other := ctl.collidingTopic(s.name)
	if other == "" {
		other = pending.names[collisionName(s.name)]
	}
	if other != "" {
		return meta.Record{}, kerr.InvalidTopicException.Code, fmt.Sprintf(
			"Topic '%s' collides with existing topic: %s", s.name, other)
	}
	partitions, rf, code, msg := ctl.planLayout(s)
	if code != 0 {
		return meta.Record{}, code, msg
	}
	configs, code, msg := planConfigs(s.configs)
	if code != 0 {
		return meta.Record{}, code, msg
	}
	if code, msg := ctl.hosts.partitionBudget(int64(partitions), pending.partitions); code != 0 {
		return meta.Record{}, code, msg
	}
	pending.names[collisionName(s.name)] = s.name
	pending.partitions += int64(partitions)
	return meta.Record{Kind: meta.KindTopicCreated, Topic: s.name, Partitions: partitions,
		ReplicationFactor: rf, Configs: configs}, 0, ""
}

// planLayout resolves the partition count and replication factor of a new topic.
func (ctl *adminController) planLayout(s topicSpec) (int32, int16, int16, string) {
	if len(s.assignment) > 0 {
		if s.partitions != -1 || s.replicationFactor != -1 {
			return 0, 0, kerr.InvalidRequest.Code, "Both numPartitions or replicationFactor " +
				"and replicasAssignments were set. Both cannot be used at the same time."
		}
		n := int32(len(s.assignment))
		if code, msg := checkPartitionCount(n); code != 0 {
			return 0, 0, code, msg
		}
		seen := make([]bool, n)
		for _, a := range s.assignment {
			if a.Partition < 0 || a.Partition >= n || seen[a.Partition] {
				return 0, 0, kerr.InvalidReplicaAssignment.Code,
					"Partitions should be a consecutive 0-based integer sequence"
			}
			seen[a.Partition] = true
			if ctl.ctlPort != nil {
				continue // the whole assignment is checked below
			}
			if p := ctl.checkReplicas(a.Replicas); p != "" {
				return 0, 0, kerr.InvalidReplicaAssignment.Code, p
			}
		}
		if ctl.ctlPort == nil {
			return n, 1, 0, ""
		}
		// The controller checks it again as it places (its image is this node's).
		assign := manualAssignment(s.assignment)
		if _, code, msg := controller.CheckAssignment(ctl.image, assign, 0); code != 0 {
			return 0, 0, code, msg
		}
		return n, int16(len(assign[0])), 0, ""
	}
	n := s.partitions
	if n == -1 {
		n = ctl.cfg.NumPartitions
	}
	if code, msg := checkPartitionCount(n); code != 0 {
		return 0, 0, code, msg
	}
	rf, code, msg := ctl.replicationFactor(s.replicationFactor)
	return n, rf, code, msg
}

// planConfigs validates a new topic's config overrides and returns them sorted.
func planConfigs(in []kmsg.CreateTopicsRequestTopicConfig) ([]meta.Config, int16, string) {
	seen := map[string]bool{}
	var out []meta.Config
	for _, c := range in {
		if seen[c.Name] {
			return nil, kerr.InvalidConfig.Code,
				fmt.Sprintf("Config %s is given more than once", c.Name)
		}
		seen[c.Name] = true
		if code, msg := checkTopicConfig(c.Name, c.Value); code != 0 {
			return nil, code, msg
		}
		out = append(out, meta.Config{Name: c.Name, Value: *c.Value})
	}
	return sortConfigs(out), 0, ""
}
