package meta

// Kind says what a Record changes.
type Kind uint8

const (
	KindTopicCreated Kind = iota + 1
	KindPartitionsAdded
	KindTopicDeleted
	KindConfigsAltered
	KindProducerIDBlock
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
	default:
		return "Unknown"
	}
}

// Config is one topic configuration override.
type Config struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Record is one committed metadata change. Only the fields its Kind names are set.
// Records are encoded as JSON by the metadata log adapters; field names are part of the
// on-disk format.
type Record struct {
	Kind Kind `json:"kind"`
	// Topic is set for every kind except KindProducerIDBlock.
	Topic string `json:"topic,omitempty"`
	// TopicID is the topic's UUID (TopicCreated); a recreated topic gets a new one.
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
}
