package broker

// Helpers shared by the admin handlers (topics, partitions, configs).
//
// Every handler that changes metadata runs through serialize: one admin operation at a
// time, validated against the image as it is when the operation starts and answered once
// its records committed. Without that, two requests validated against the same image
// could both "succeed" while only one record applies (two creations of one topic), or
// two incremental config changes computed from the same base could lose one of them.
// Commits are local and fast, so admin throughput does not suffer in practice; reads
// (Metadata for known topics, DescribeConfigs, DescribeCluster) never wait.

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

const (
	// maxQueuedAdmin bounds the admin operations waiting behind the running one. Past it
	// the request's connection is closed (clients reconnect and retry).
	maxQueuedAdmin = 1024
	// maxPartitionsPerTopic bounds CreateTopics/CreatePartitions so that one request
	// cannot make the node open millions of logs.
	maxPartitionsPerTopic = 10_000
	// maxTopicNameLen is Kafka's limit (249: the partition directory name adds a suffix).
	maxTopicNameLen = 249
)

// commitFailure is the per-entity answer when a proposed record did not commit. The
// record was not applied, so a retry is safe: REQUEST_TIMED_OUT is retriable.
func commitFailure(err error) (int16, string) {
	if code, msg, ok := controllerRefusal(err); ok {
		return code, msg
	}
	return kerr.RequestTimedOut.Code, "the metadata change did not commit: " + err.Error()
}

func strp(s string) *string { return &s }

// topicNameProblem returns why name is not a legal Kafka topic name, or "".
func topicNameProblem(name string) string {
	switch {
	case name == "":
		return "Topic name is illegal, it can't be empty"
	case name == "." || name == "..":
		return "Topic name cannot be \".\" or \"..\""
	case len(name) > maxTopicNameLen:
		return fmt.Sprintf("Topic name is illegal, it can't be longer than %d characters, "+
			"topic name: %.40s...", maxTopicNameLen, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Sprintf("Topic name %q is illegal, it contains a character other "+
				"than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return ""
}

// collisionName maps a topic name to the form under which Kafka considers names equal
// (metric names replace '.' with '_', so "a.b" and "a_b" may not coexist).
func collisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// collidingTopic returns an existing topic whose name collides with name, or "".
func (n *node) collidingTopic(name string) string {
	c := collisionName(name)
	if c == name && !strings.Contains(name, "_") {
		return "" // no '.' or '_': only an identical name could collide
	}
	for _, n := range n.image.TopicNames() {
		if n != name && collisionName(n) == c {
			return n
		}
	}
	return ""
}

// newTopicID returns a fresh random (version 4) UUID not used by any topic.
func (n *node) newTopicID() [16]byte {
	for range 100 {
		var id [16]byte
		for i := 0; i < 16; i += 4 {
			v := uint32(n.rnd.Int63())
			id[i], id[i+1], id[i+2], id[i+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
		}
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if n.image.TopicByID(id) == nil {
			return id
		}
	}
	core.Invariant(false, "B7", "no unused topic id after 100 draws: the rand source is broken")
	return [16]byte{}
}

// replicationFactor resolves a requested replication factor (-1: the broker default)
// and checks it against the single broker this cluster has, or with a quorum against
// the live (registered, unfenced) brokers.
func (n *node) replicationFactor(rf int16) (int16, int16, string) {
	if rf == -1 {
		rf = n.cfg.DefaultReplicationFactor
	}
	if rf <= 0 {
		return 0, kerr.InvalidReplicationFactor.Code,
			"Replication factor must be larger than 0, or -1 to use the default value."
	}
	if n.ctlPort != nil {
		// The controller checks it again as it places (its image is this node's).
		live := len(controller.EligibleBrokers(n.image))
		if code, msg := controller.CheckReplicationFactor(rf, live); code != 0 {
			return 0, code, msg
		}
		return rf, 0, ""
	}
	if rf > 1 {
		return 0, kerr.InvalidReplicationFactor.Code, fmt.Sprintf(
			"Replication factor: %d larger than available brokers: 1.", rf)
	}
	return rf, 0, ""
}

// checkReplicas checks one partition's requested replica list: on a single node it can
// only be this node.
func (n *node) checkReplicas(replicas []int32) string {
	if len(replicas) != 1 || replicas[0] != n.cfg.NodeID {
		return fmt.Sprintf("replica assignment %v is not possible: this cluster has one "+
			"broker, %d, so every partition's replicas must be [%d]", replicas,
			n.cfg.NodeID, n.cfg.NodeID)
	}
	return ""
}

// checkPartitionCount checks a requested total partition count (after -1 was resolved).
func checkPartitionCount(n int32) (int16, string) {
	if n <= 0 {
		return kerr.InvalidPartitions.Code,
			"Number of partitions was set to an invalid non-positive value."
	}
	if n > maxPartitionsPerTopic {
		return kerr.InvalidPartitions.Code, fmt.Sprintf(
			"Number of partitions %d is above this broker's limit of %d per topic.",
			n, maxPartitionsPerTopic)
	}
	return 0, ""
}

// checkTopicConfig validates one topic config entry.
func checkTopicConfig(name string, value *string) (int16, string) {
	def := LookupTopicConfig(name)
	if def == nil {
		return kerr.InvalidConfig.Code, fmt.Sprintf("Unknown topic config name: %s", name)
	}
	if value == nil {
		return kerr.InvalidConfig.Code, fmt.Sprintf(
			"Null value not supported for topic config: %s", name)
	}
	if err := def.Validate(*value); err != nil {
		return kerr.InvalidConfig.Code, fmt.Sprintf(
			"Invalid value %s for configuration %s: %v", *value, name, err)
	}
	return 0, ""
}

// brokerResourceName is this node's name as a BROKER config resource.
func (n *node) brokerResourceName() string { return strconv.Itoa(int(n.cfg.NodeID)) }

// configTypes gives the Kafka type of each config Sluice knows; names missing here are
// reported as STRING.
var configTypes = map[string]kmsg.ConfigType{
	"cleanup.policy":                  kmsg.ConfigTypeList,
	"max.message.bytes":               kmsg.ConfigTypeInt,
	"min.insync.replicas":             kmsg.ConfigTypeInt,
	"retention.bytes":                 kmsg.ConfigTypeLong,
	"retention.ms":                    kmsg.ConfigTypeLong,
	"segment.bytes":                   kmsg.ConfigTypeInt,
	"index.interval.bytes":            kmsg.ConfigTypeInt,
	"segment.ms":                      kmsg.ConfigTypeLong,
	"num.partitions":                  kmsg.ConfigTypeInt,
	"default.replication.factor":      kmsg.ConfigTypeInt,
	"auto.create.topics.enable":       kmsg.ConfigTypeBoolean,
	"log.retention.check.interval.ms": kmsg.ConfigTypeLong,
}

func configType(name string) kmsg.ConfigType {
	if t, ok := configTypes[name]; ok {
		return t
	}
	return kmsg.ConfigTypeString
}

// sortConfigs sorts overrides by name, as records and the image keep them.
func sortConfigs(cs []meta.Config) []meta.Config {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	return cs
}
