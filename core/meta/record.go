package meta

import "github.com/sluicemq/sluice/core/acl"

// Kind says what a Record changes. Kinds are part of the on-disk format (the metadata
// log stores them as numbers): never renumber one, only add new ones at the end.
type Kind uint8

const (
	KindTopicCreated Kind = iota + 1
	KindPartitionsAdded
	KindTopicDeleted
	KindConfigsAltered
	KindProducerIDBlock
	// KindClusterCreated fixes the cluster id; it is the first record a cluster's
	// controller commits and is never changed after.
	KindClusterCreated
	// KindBrokerRegistered registers (or re-registers, with a new incarnation) a broker.
	KindBrokerRegistered
	// KindBrokerChange changes a registered broker's state (fenced, unfenced, shutting
	// down) for the registration whose epoch it names.
	KindBrokerChange
	// KindPartitionChange sets one partition's leader, ISR and replicas.
	KindPartitionChange
	// KindScramCredentialSet inserts or replaces one user's SCRAM credential for one
	// mechanism (AlterUserScramCredentials, KIP-554); KindScramCredentialDeleted removes
	// it (scram.go).
	KindScramCredentialSet
	KindScramCredentialDeleted
	// KindClientQuotaAltered sets or removes client quota values of one entity
	// (AlterClientQuotas, KIP-546; quota.go).
	KindClientQuotaAltered
	// KindACLsCreated adds ACL bindings (CreateAcls); KindACLsDeleted removes them
	// (DeleteAcls, which resolves its filters to bindings before proposing; acl.go).
	KindACLsCreated
	KindACLsDeleted
	// KindBrokerUnregistered removes the registration of NodeID whose epoch is
	// BrokerEpoch (UnregisterBroker, `sluice cluster unregister`): the node is no longer
	// a broker of the cluster. It applies only to a fenced broker hosting no replica.
	KindBrokerUnregistered Kind = 15
)

func (k Kind) String() string {
	switch k {
	case KindTopicCreated:
		return "TopicCreated"
	case KindPartitionsAdded:
		return "PartitionsAdded"
	case KindTopicDeleted:
		return "TopicDeleted"
	case KindConfigsAltered:
		return "ConfigsAltered"
	case KindProducerIDBlock:
		return "ProducerIDBlock"
	case KindClusterCreated:
		return "ClusterCreated"
	case KindBrokerRegistered:
		return "BrokerRegistered"
	case KindBrokerChange:
		return "BrokerChange"
	case KindPartitionChange:
		return "PartitionChange"
	case KindScramCredentialSet:
		return "ScramCredentialSet"
	case KindScramCredentialDeleted:
		return "ScramCredentialDeleted"
	case KindClientQuotaAltered:
		return "ClientQuotaAltered"
	case KindACLsCreated:
		return "ACLsCreated"
	case KindACLsDeleted:
		return "ACLsDeleted"
	case KindBrokerUnregistered:
		return "BrokerUnregistered"
	default:
		return "Unknown"
	}
}

// Config is one topic configuration override.
type Config struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// BrokerState is a registered broker's state as the controller sees it.
type BrokerState uint8

const (
	// BrokerFenced: registered but not serving (just registered and not caught up, or
	// its heartbeats stopped). It leads nothing and is in no ISR. The zero value, so a
	// registration without a state starts fenced, as in Kafka.
	BrokerFenced BrokerState = iota
	// BrokerUnfenced: alive, may lead partitions and be in ISRs.
	BrokerUnfenced
	// BrokerShuttingDown: in controlled shutdown; leads nothing, joins no ISR.
	BrokerShuttingDown
)

func (s BrokerState) String() string {
	switch s {
	case BrokerFenced:
		return "fenced"
	case BrokerUnfenced:
		return "unfenced"
	case BrokerShuttingDown:
		return "shutting-down"
	default:
		return "state(?)"
	}
}

// NoLeader is the leader of a partition that has none.
const NoLeader int32 = -1

// PartitionState is one partition's replication state: its replicas (the first is the
// preferred leader), the in-sync replicas, the leader and the two epochs. LeaderEpoch
// grows by one at every leader change; PartitionEpoch grows by one at every change of
// any of it, so a request naming an old PartitionEpoch is refused. Adding and Removing
// are the replicas a reassignment is adding and removing (both subsets of Replicas).
type PartitionState struct {
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	Adding         []int32 `json:"adding,omitempty"`
	Removing       []int32 `json:"removing,omitempty"`
}

// Record is one committed metadata change. Only the fields its Kind names are set.
// Records are encoded as JSON by the metadata log adapters; field names are part of the
// on-disk format. Fields added after the first release are omitted when zero, so
// records of the older kinds encode exactly as before and old records decode unchanged.
type Record struct {
	Kind Kind `json:"kind"`
	// Topic is set for the topic kinds and PartitionChange.
	Topic string `json:"topic,omitempty"`
	// TopicID is the topic's UUID (TopicCreated; PartitionChange names the topic it was
	// decided for); a recreated topic gets a new one.
	TopicID [16]byte `json:"topic_id,omitempty"`
	// Partitions is the new total count (TopicCreated, PartitionsAdded).
	Partitions int32 `json:"partitions,omitempty"`
	// ReplicationFactor is recorded for describe (TopicCreated).
	ReplicationFactor int16 `json:"replication_factor,omitempty"`
	// Configs are the overrides (TopicCreated) or the full new override set
	// (ConfigsAltered), sorted by name.
	Configs []Config `json:"configs,omitempty"`
	// NextProducerID is the first id after the block just allocated (ProducerIDBlock).
	NextProducerID int64 `json:"next_producer_id,omitempty"`

	// PartitionStates are the states of the partitions a TopicCreated or
	// PartitionsAdded record creates (all of a TopicCreated's, the new ones of a
	// PartitionsAdded), in partition order. Empty means unassigned: the topic predates
	// replica placement (a single node's data directory) and every partition lives on
	// the node that hosts it, as before (Image.Partition says so).
	PartitionStates []PartitionState `json:"partition_states,omitempty"`

	// ClusterID is the cluster's id (ClusterCreated).
	ClusterID string `json:"cluster_id,omitempty"`

	// NodeID is the broker's node id (BrokerRegistered, BrokerChange,
	// BrokerUnregistered).
	NodeID int32 `json:"node_id,omitempty"`
	// Incarnation is the id a broker process draws at start (BrokerRegistered): a
	// registration with a new one replaces the previous life's.
	Incarnation [16]byte `json:"incarnation_id,omitzero"`
	// BrokerEpoch is the registration's epoch (BrokerRegistered: a new one, greater
	// than every earlier registration's; BrokerChange: the registration it changes).
	BrokerEpoch int64 `json:"broker_epoch,omitempty"`
	// Host, Port and Rack are the broker's advertised listener and rack
	// (BrokerRegistered).
	Host string `json:"host,omitempty"`
	Port int32  `json:"port,omitempty"`
	Rack string `json:"rack,omitempty"`
	// Listeners are all the broker's advertised listeners by name (BrokerRegistered),
	// the one in Host and Port included; empty in registrations from before named
	// listeners, whose one listener is Host and Port.
	Listeners []Endpoint `json:"listeners,omitempty"`
	// StorageID is the id of the broker's data directory (BrokerRegistered; Kafka's
	// KIP-858 log directory id): a node whose data directory was lost or replaced
	// registers a new one.
	StorageID [16]byte `json:"storage_id,omitzero"`
	// StorageLost says the registering broker's data directory is not the one of its
	// previous registration (BrokerRegistered): it holds no ISR place until it caught
	// up again, and is not unfenced while it is in an ISR.
	StorageLost bool `json:"storage_lost,omitempty"`
	// BrokerState is the broker's new state (BrokerChange), or its state at
	// registration (BrokerRegistered: fenced unless a snapshot restores another).
	BrokerState BrokerState `json:"broker_state,omitempty"`

	// Partition is the partition a PartitionChange sets; State its complete new state.
	Partition int32          `json:"partition,omitempty"`
	State     PartitionState `json:"state,omitzero"`
	// Unclean marks a PartitionChange whose new leader was not in the ISR (an unclean
	// election, unclean.leader.election.enable=true): records acknowledged by the old
	// ISR may be lost.
	Unclean bool `json:"unclean,omitempty"`

	// User and ScramMechanism name the credential a ScramCredentialSet or
	// ScramCredentialDeleted record changes; Salt, StoredKey, ServerKey and Iterations
	// are the new credential (ScramCredentialSet): never a password.
	User           string         `json:"user,omitempty"`
	ScramMechanism ScramMechanism `json:"scram_mechanism,omitempty"`
	Salt           []byte         `json:"salt,omitempty"`
	StoredKey      []byte         `json:"stored_key,omitempty"`
	ServerKey      []byte         `json:"server_key,omitempty"`
	Iterations     int32          `json:"iterations,omitempty"`
	// QuotaEntity is the client quota entity a ClientQuotaAltered record changes;
	// QuotaOps the values it sets or removes, in order.
	QuotaEntity QuotaEntity `json:"quota_entity,omitzero"`
	QuotaOps    []QuotaOp   `json:"quota_ops,omitempty"`
	// ACLs are the bindings an ACLsCreated record adds or an ACLsDeleted one removes.
	ACLs []acl.Binding `json:"acls,omitempty"`
}

// Endpoint is one named advertised listener of a broker.
type Endpoint struct {
	Name string `json:"name"`
	Host string `json:"host"`
	Port int32  `json:"port"`
}
