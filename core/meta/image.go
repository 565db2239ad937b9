package meta

import (
	"fmt"
	"sort"
)

// Topic is one topic as the image knows it.
type Topic struct {
	Name              string
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
	Configs           []Config // overrides, sorted by name
}

// Override returns the override for name, if any.
func (t *Topic) Override(name string) (string, bool) {
	for _, c := range t.Configs {
		if c.Name == name {
			return c.Value, true
		}
	}
	return "", false
}

// Image is the metadata as of the last applied record.
type Image struct {
	topics         map[string]*Topic
	nextProducerID int64
	applied        int64 // number of records applied
}

// NewImage returns an empty image.
func NewImage() *Image { return &Image{topics: map[string]*Topic{}} }

// Apply folds one committed record into the image. A record that cannot apply (e.g. a
// deletion of an unknown topic) is a bug in the proposer, which checks before
// proposing, but commit order can still race two proposals; such records are ignored and
// reported so the caller can log them.
func (im *Image) Apply(r Record) error {
	im.applied++
	switch r.Kind {
	case KindTopicCreated:
		if _, ok := im.topics[r.Topic]; ok {
			return fmt.Errorf("topic %q already exists", r.Topic)
		}
		im.topics[r.Topic] = &Topic{Name: r.Topic, ID: r.TopicID, Partitions: r.Partitions,
			ReplicationFactor: r.ReplicationFactor, Configs: sortedConfigs(r.Configs)}
	case KindPartitionsAdded:
		t, ok := im.topics[r.Topic]
		if !ok || r.Partitions <= t.Partitions {
			return fmt.Errorf("cannot grow topic %q to %d partitions", r.Topic, r.Partitions)
		}
		t.Partitions = r.Partitions
	case KindTopicDeleted:
		if _, ok := im.topics[r.Topic]; !ok {
			return fmt.Errorf("topic %q does not exist", r.Topic)
		}
		delete(im.topics, r.Topic)
	case KindConfigsAltered:
		t, ok := im.topics[r.Topic]
		if !ok {
			return fmt.Errorf("topic %q does not exist", r.Topic)
		}
		t.Configs = sortedConfigs(r.Configs)
	case KindProducerIDBlock:
		// A block not beyond the last one overlaps it: two proposals drew the same
		// block (one answered "unknown" committed first). It must not be handed out.
		if r.NextProducerID <= im.nextProducerID {
			return fmt.Errorf("producer id block up to %d is not beyond %d", r.NextProducerID,
				im.nextProducerID)
		}
		im.nextProducerID = r.NextProducerID
	default:
		return fmt.Errorf("unknown metadata record kind %d", r.Kind)
	}
	return nil
}

// Topic returns the named topic, or nil.
func (im *Image) Topic(name string) *Topic { return im.topics[name] }

// TopicNames returns every topic name, sorted.
func (im *Image) TopicNames() []string {
	names := make([]string, 0, len(im.topics))
	for n := range im.topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TopicByID returns the topic with the given UUID, or nil.
func (im *Image) TopicByID(id [16]byte) *Topic {
	for _, n := range im.TopicNames() {
		if t := im.topics[n]; t.ID == id {
			return t
		}
	}
	return nil
}

// NextProducerID is the first producer id not yet handed out in a committed block.
func (im *Image) NextProducerID() int64 { return im.nextProducerID }

func sortedConfigs(in []Config) []Config {
	out := append([]Config(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
