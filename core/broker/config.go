package broker

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/sluicemq/sluice/core/meta"
	"github.com/sluicemq/sluice/core/replica"
)

// Config is the node's configuration as the broker actor sees it. Defaults come from
// DefaultConfig; a node's config file (Kafka server.properties style) and command line
// override them through Set.
type Config struct {
	NodeID int32
	// AdvertisedHost and AdvertisedPort are the listener peers use
	// (inter.broker.listener.name's), and the answer to a request whose listener is not
	// in Listeners.
	AdvertisedHost string
	AdvertisedPort int32
	// Listeners are every advertised listener by name (advertised.listeners): a
	// Metadata, DescribeCluster or FindCoordinator request is answered with the address
	// of the listener it arrived on (Request.Listener), as in Kafka.
	Listeners []meta.Endpoint
	ClusterID string
	// LogDir is the directory holding this node's partition logs (Kafka's log.dirs; a
	// node has one), as DescribeLogDirs names it: the runtime sets the absolute path of
	// <data>/logs. The broker never opens it: the Env does.
	LogDir string

	AutoCreateTopics         bool  // auto.create.topics.enable
	NumPartitions            int32 // num.partitions
	DefaultReplicationFactor int16 // default.replication.factor
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms: an ISR member not caught up with
	// its leader for this long is dropped from the ISR (isr_changes.go); the leader
	// checks every half of it.
	ReplicaLagTimeMaxMs int64
	// RetentionCheckIntervalMs is log.retention.check.interval.ms.
	RetentionCheckIntervalMs int64
	// ProducerSnapshotEveryBatches is sluice.producer.snapshot.interval.batches: how many
	// durable batches of a partition pass between snapshots of its producer table
	// (replica.Config.SnapshotEveryBatches). The simulator lowers it so that restarts
	// recover from a snapshot followed by more batches.
	ProducerSnapshotEveryBatches int
	// MaxWaitingFetches bounds long-polling fetch requests held at once; past it a fetch
	// is answered at once with whatever is there.
	MaxWaitingFetches int
	// MaxWaitingProduces bounds produce requests waiting for durability.
	MaxWaitingProduces int
	// MaxPartitions is sluice.max.partitions: creates that would take the node past it
	// are refused. 0 means no bound; a node (runtime) derives one from its memory and
	// descriptors when the setting is not given.
	MaxPartitions int

	// TopicDefaults holds the broker-level default of every topic config, keyed by the
	// topic config name (retention.ms, ...). Set accepts both the topic name and Kafka's
	// broker-level name (log.retention.ms, ...).
	TopicDefaults map[string]string

	// Groups holds the group coordinator's settings (groups.go).
	Groups GroupConfig

	// Limits bounds fetch responses and topic creation (limits.go).
	Limits LimitsConfig

	// Fetcher holds the follower fetcher's settings (fetcher_config.go).
	Fetcher FetcherConfig
	// Cleaner holds the log cleaner's settings (cleaner.go).
	Cleaner CleanerConfig
	// Quotas holds the client quota windows (quotas.go).
	Quotas QuotaConfig
	// Authz holds the authorizer's settings (authz_config.go).
	Authz AuthzConfig
}

// TopicConfigDef describes one topic-level setting Sluice understands.
type TopicConfigDef struct {
	Name       string
	BrokerName string // the server.properties name of its default
	Default    string
	Validate   func(string) error
	Doc        string
}

// minSegmentBytes is the smallest segment.bytes (and offsets.topic.segment.bytes), as
// in Kafka.
const minSegmentBytes = 14

// TopicConfigDefs lists every topic config, sorted by name.
var TopicConfigDefs = []TopicConfigDef{
	{"cleanup.policy", "log.cleanup.policy", "delete", validCleanupPolicy,
		"delete, compact, or both (compact,delete)"},
	{"delete.retention.ms", "log.cleaner.delete.retention.ms", "86400000",
		intRange(0, math.MaxInt64), "how long the cleaner keeps a tombstone"},
	{"index.interval.bytes", "log.index.interval.bytes", "4096", intRange(0, 1<<31-1),
		"bytes between sparse index entries"},
	{"log.flush.policy", "log.flush.policy", "always", oneOf("always", "never"),
		"always: fsync before acks=all is answered and before data is visible to readers; " +
			"never: trust the OS page cache (a crash of the machine may lose acknowledged writes)"},
	{"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "9223372036854775807",
		intRange(1, math.MaxInt64), "a dirty segment older than this is cleaned"},
	{"max.message.bytes", "message.max.bytes", "1048588", intRange(0, 1<<30), "largest batch accepted"},
	{"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", "3600000",
		intRange(0, math.MaxInt64), "how far ahead of the broker's clock a CreateTime " +
			"record's timestamp may be; later ones are refused (INVALID_TIMESTAMP)"},
	{"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms",
		"9223372036854775807", intRange(0, math.MaxInt64), "how far behind the broker's " +
			"clock a CreateTime record's timestamp may be; older ones are refused"},
	{"message.timestamp.type", "log.message.timestamp.type", "CreateTime",
		oneOf("CreateTime", "LogAppendTime"), "which timestamp batches carry"},
	{"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio", "0.5", floatRange(0, 1),
		"dirty share of the cleanable bytes that starts a clean"},
	{"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms", "0",
		intRange(0, math.MaxInt64), "a record stays uncompacted at least this long"},
	{"min.insync.replicas", "min.insync.replicas", "1", intRange(1, 1<<15), "checked for acks=all"},
	{"retention.bytes", "log.retention.bytes", "-1", intRange(-1, 1<<62), "per-partition size bound"},
	{"retention.ms", "log.retention.ms", "604800000", intRange(-1, 1<<62), "age bound of whole segments"},
	{"segment.bytes", "log.segment.bytes", "1073741824", intRange(minSegmentBytes, 1<<31-1),
		"segment roll size"},
	{"segment.ms", "log.roll.ms", "604800000", intRange(1, 1<<62), "segment roll age"},
}

// TopicConfigDef returns the definition of a topic config name, or nil.
func LookupTopicConfig(name string) *TopicConfigDef {
	for i := range TopicConfigDefs {
		if TopicConfigDefs[i].Name == name {
			return &TopicConfigDefs[i]
		}
	}
	return nil
}

// DefaultConfig returns the defaults an experienced Kafka operator expects.
func DefaultConfig() Config {
	c := Config{
		NodeID: 1, AdvertisedHost: "127.0.0.1", AdvertisedPort: 9092,
		ClusterID:                "sluice-dev-cluster",
		AutoCreateTopics:         true,
		NumPartitions:            3,
		DefaultReplicationFactor: 1,
		RetentionCheckIntervalMs: 300_000,
		ReplicaLagTimeMaxMs:      30_000,
		MaxWaitingFetches:        10_000,
		MaxWaitingProduces:       10_000,
		TopicDefaults:            map[string]string{},
		Groups:                   DefaultGroupConfig(),
		Limits:                   DefaultLimitsConfig(),
		Fetcher:                  DefaultFetcherConfig(),
		Cleaner:                  DefaultCleanerConfig(),
		Quotas:                   DefaultQuotaConfig(),

		ProducerSnapshotEveryBatches: replica.DefaultSnapshotEveryBatches,
	}
	for _, d := range TopicConfigDefs {
		c.TopicDefaults[d.Name] = d.Default
	}
	return c
}

// Set applies one server.properties style setting. Unknown names are an error, so a
// typo in a config file stops the node at start-up instead of being ignored.
func (c *Config) Set(name, value string) error {
	for _, d := range TopicConfigDefs {
		if name == d.Name || name == d.BrokerName {
			if err := d.Validate(value); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			c.TopicDefaults[d.Name] = value
			return nil
		}
	}
	var err error
	switch name {
	case "node.id", "broker.id":
		err = setInt32(&c.NodeID, value)
	case "cluster.id":
		c.ClusterID = value
	case "auto.create.topics.enable":
		c.AutoCreateTopics, err = strconv.ParseBool(value)
	case "num.partitions":
		err = setInt32(&c.NumPartitions, value)
		if err == nil && c.NumPartitions < 1 {
			err = fmt.Errorf("must be at least 1")
		}
	case "default.replication.factor":
		var v int32
		err = setInt32(&v, value)
		if err == nil && (v < 1 || v > math.MaxInt16) {
			err = fmt.Errorf("%d is outside [1, %d]", v, math.MaxInt16)
		}
		if err == nil {
			c.DefaultReplicationFactor = int16(v)
		}
	case "sluice.max.partitions":
		var v int32
		err = setInt32(&v, value)
		if err == nil && v < 0 {
			err = fmt.Errorf("must be 0 (derived at start) or positive")
		}
		c.MaxPartitions = int(v)
	case "log.retention.check.interval.ms":
		c.RetentionCheckIntervalMs, err = strconv.ParseInt(value, 10, 64)
		if err == nil && c.RetentionCheckIntervalMs < 1 {
			err = fmt.Errorf("must be positive")
		}
	case "replica.lag.time.max.ms":
		c.ReplicaLagTimeMaxMs, err = strconv.ParseInt(value, 10, 64)
		if err == nil && c.ReplicaLagTimeMaxMs < 1 {
			err = fmt.Errorf("must be positive")
		}
	case "sluice.producer.snapshot.interval.batches":
		var v int32
		err = setInt32(&v, value)
		if err == nil && v < 1 {
			err = fmt.Errorf("must be at least 1")
		}
		if err == nil {
			c.ProducerSnapshotEveryBatches = int(v)
		}
	default:
		if ok, err := c.Groups.set(name, value); ok {
			return err
		}
		if ok, err := c.Limits.set(name, value); ok {
			return err
		}
		if ok, err := c.Fetcher.set(name, value); ok {
			return err
		}
		if ok, err := c.Cleaner.set(name, value); ok {
			return err
		}
		if ok, err := c.Quotas.set(name, value); ok {
			return err
		}
		if ok, err := c.Authz.set(name, value); ok {
			return err
		}
		return fmt.Errorf("unknown setting %q", name)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// SettingNames lists every name Set accepts, sorted (for help text and errors).
func SettingNames() []string {
	names := []string{"node.id", "broker.id", "cluster.id", "auto.create.topics.enable",
		"num.partitions", "default.replication.factor", "log.retention.check.interval.ms",
		"sluice.max.partitions", "sluice.producer.snapshot.interval.batches",
		"replica.lag.time.max.ms"}
	names = append(names, groupSettingNames...)
	names = append(names, limitSettingNames()...)
	names = append(names, fetcherSettingNames()...)
	names = append(names, cleanerSettingNames...)
	names = append(names, quotaSettingNames()...)
	names = append(names, authzSettingNames...)
	for _, d := range TopicConfigDefs {
		names = append(names, d.Name)
		if d.BrokerName != d.Name {
			names = append(names, d.BrokerName)
		}
	}
	sort.Strings(names)
	return names
}

func setInt32(dst *int32, v string) error {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return fmt.Errorf("not a number: %q", v)
	}
	*dst = int32(n)
	return nil
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of %v", v, allowed)
	}
}

func intRange(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not a number: %q", v)
		}
		if n < lo || n > hi {
			return fmt.Errorf("%d is outside [%d, %d]", n, lo, hi)
		}
		return nil
	}
}
