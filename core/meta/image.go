package meta

import (
	"fmt"
	"slices"
	"sort"

	"github.com/sluicemq/sluice/core/acl"
)

// Topic is one topic as the image knows it.
type Topic struct {
	Name              string
	ID                [16]byte
	Partitions        int32
	ReplicationFactor int16
	Configs           []Config // overrides, sorted by name
	// States holds each partition's replication state, indexed by partition, or is nil
	// for an unassigned topic (created before replica placement; see Image.Partition).
	States []PartitionState
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

// Broker is one registered broker as the image knows it.
type Broker struct {
	ID          int32
	Incarnation [16]byte
	Epoch       int64
	Host        string
	Port        int32
	Rack        string
	State       BrokerState
	// Listeners are the broker's advertised listeners by name; empty for a
	// registration from before named listeners (Host and Port are its one listener).
	Listeners []Endpoint
	// StorageID is the id of the broker's data directory (drawn when it was first
	// used; zero when the broker did not say).
	StorageID [16]byte
	// StorageLost says the registration came with a data directory other than the
	// previous registration's (the node's logs are gone or replaced): its ISR places
	// are from a log it no longer has. Set by the controller in the registration,
	// cleared when the broker is unfenced, which the controller does only once the
	// broker is in no ISR (docs/replication.md, "Lost disks").
	StorageLost bool
}

// Endpoint is the broker's address on the named listener; ok is false when the broker
// registered listeners and none has that name (Kafka leaves such a broker out of the
// answers given on that listener). An empty name, or a registration without
// listeners, gives Host and Port.
func (b *Broker) Endpoint(listener string) (host string, port int32, ok bool) {
	if listener == "" || len(b.Listeners) == 0 {
		return b.Host, b.Port, true
	}
	for _, e := range b.Listeners {
		if e.Name == listener {
			return e.Host, e.Port, true
		}
	}
	return "", 0, false
}

// Image is the metadata as of the last applied record.
type Image struct {
	topics         map[string]*Topic
	nextProducerID int64
	applied        int64 // number of records applied
	clusterID      string
	brokers        map[int32]*Broker
	maxBrokerEpoch int64
	// retired is the last unregistered broker when its epoch is maxBrokerEpoch (no
	// registration came after): Snapshot writes it, registered then unregistered, so
	// that the rebuilt image keeps maxBrokerEpoch.
	retired      *Broker
	scram        map[scramKey]ScramCredential       // SCRAM credentials (scram.go)
	quotas       map[QuotaEntity]map[string]float64 // client quotas (quota.go)
	quotaVersion uint64                             // changes with every quota change
	acls         *acl.Set                           // ACL bindings (acl.go)
	aclVersion   uint64
}

// NewImage returns an empty image.
func NewImage() *Image {
	return &Image{topics: map[string]*Topic{}, brokers: map[int32]*Broker{},
		scram: map[scramKey]ScramCredential{}, quotas: map[QuotaEntity]map[string]float64{},
		acls: acl.NewSet()}
}

// Apply folds one committed record into the image. A record that cannot apply (e.g. a
// deletion of an unknown topic, a partition change naming an old partition epoch) is
// refused: it changes nothing and the error says why. The proposer checks before
// proposing, but commit order can still race two proposals (one answered "unknown"
// that committed late); the conditions here make such a record harmless.
func (im *Image) Apply(r Record) error {
	im.applied++
	switch r.Kind {
	case KindTopicCreated:
		return im.topicCreated(r)
	case KindPartitionsAdded:
		return im.partitionsAdded(r)
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
	case KindClusterCreated:
		if im.clusterID != "" || r.ClusterID == "" {
			return fmt.Errorf("cluster id %q cannot replace %q", r.ClusterID, im.clusterID)
		}
		im.clusterID = r.ClusterID
	case KindBrokerRegistered:
		return im.brokerRegistered(r)
	case KindBrokerChange:
		return im.brokerChange(r)
	case KindBrokerUnregistered:
		return im.brokerUnregistered(r)
	case KindPartitionChange:
		return im.partitionChange(r)
	case KindScramCredentialSet, KindScramCredentialDeleted:
		return im.applyScram(r)
	case KindClientQuotaAltered:
		return im.applyQuota(r)
	case KindACLsCreated, KindACLsDeleted:
		return im.applyACLs(r)
	default:
		return fmt.Errorf("unknown metadata record kind %d", r.Kind)
	}
	return nil
}

func (im *Image) topicCreated(r Record) error {
	if _, ok := im.topics[r.Topic]; ok {
		return fmt.Errorf("topic %q already exists", r.Topic)
	}
	states, err := checkNewStates(r, 0)
	if err != nil {
		return err
	}
	im.topics[r.Topic] = &Topic{Name: r.Topic, ID: r.TopicID, Partitions: r.Partitions,
		ReplicationFactor: r.ReplicationFactor, Configs: sortedConfigs(r.Configs),
		States: states}
	return nil
}

func (im *Image) partitionsAdded(r Record) error {
	t, ok := im.topics[r.Topic]
	if !ok || r.Partitions <= t.Partitions {
		return fmt.Errorf("cannot grow topic %q to %d partitions", r.Topic, r.Partitions)
	}
	if (t.States == nil) != (len(r.PartitionStates) == 0) {
		return fmt.Errorf("topic %q: new partitions must be assigned exactly when the "+
			"topic's are", r.Topic)
	}
	states, err := checkNewStates(r, t.Partitions)
	if err != nil {
		return err
	}
	t.Partitions = r.Partitions
	if states != nil {
		t.States = append(t.States, states...)
	}
	return nil
}

// checkNewStates validates the partition states of a record creating partitions
// from..r.Partitions-1: none (unassigned), or one valid state per new partition.
func checkNewStates(r Record, from int32) ([]PartitionState, error) {
	if len(r.PartitionStates) == 0 {
		return nil, nil
	}
	if int32(len(r.PartitionStates)) != r.Partitions-from {
		return nil, fmt.Errorf("topic %q: %d partition states for %d new partitions",
			r.Topic, len(r.PartitionStates), r.Partitions-from)
	}
	out := make([]PartitionState, len(r.PartitionStates))
	for i, s := range r.PartitionStates {
		if err := s.Check(); err != nil {
			return nil, fmt.Errorf("topic %q partition %d: %w", r.Topic, from+int32(i), err)
		}
		out[i] = s.Clone()
	}
	return out, nil
}

func (im *Image) brokerRegistered(r Record) error {
	if r.NodeID < 0 || r.BrokerEpoch <= im.maxBrokerEpoch {
		return fmt.Errorf("registration of node %d with epoch %d: the last epoch is %d",
			r.NodeID, r.BrokerEpoch, im.maxBrokerEpoch)
	}
	if r.BrokerState > BrokerShuttingDown {
		return fmt.Errorf("registration of node %d: unknown state %d", r.NodeID, r.BrokerState)
	}
	im.maxBrokerEpoch = r.BrokerEpoch
	im.retired = nil
	im.brokers[r.NodeID] = &Broker{ID: r.NodeID, Incarnation: r.Incarnation,
		Epoch: r.BrokerEpoch, Host: r.Host, Port: r.Port, Rack: r.Rack, State: r.BrokerState,
		Listeners: slices.Clone(r.Listeners), StorageID: r.StorageID,
		StorageLost: r.StorageLost}
	return nil
}

// brokerChange applies only to the registration it names and only when it changes the
// state, so a late duplicate of a change is harmless.
func (im *Image) brokerChange(r Record) error {
	b, ok := im.brokers[r.NodeID]
	switch {
	case !ok:
		return fmt.Errorf("broker %d is not registered", r.NodeID)
	case b.Epoch != r.BrokerEpoch:
		return fmt.Errorf("broker %d change for epoch %d, registered at %d", r.NodeID,
			r.BrokerEpoch, b.Epoch)
	case r.BrokerState > BrokerShuttingDown:
		return fmt.Errorf("broker %d: unknown state %d", r.NodeID, r.BrokerState)
	case b.State == r.BrokerState:
		return fmt.Errorf("broker %d is already %v", r.NodeID, r.BrokerState)
	}
	b.State = r.BrokerState
	if b.State == BrokerUnfenced {
		b.StorageLost = false
	}
	return nil
}

// partitionChange applies a partition's new state when it is the next one of the same
// topic (its id: a change decided before a topic was deleted and created again does not
// apply to the new one): partition epoch one more than now, leader epoch one more
// exactly when the leader changes, and a new leader from the current ISR unless the
// record says the election was unclean.
func (im *Image) partitionChange(r Record) error {
	t, ok := im.topics[r.Topic]
	if !ok || r.Partition < 0 || r.Partition >= t.Partitions || t.States == nil {
		return fmt.Errorf("partition %s-%d does not exist or is unassigned", r.Topic,
			r.Partition)
	}
	if r.TopicID != t.ID {
		return fmt.Errorf("partition %s-%d: the change is for an earlier topic of the name",
			r.Topic, r.Partition)
	}
	cur, next := &t.States[r.Partition], r.State
	if err := next.Check(); err != nil {
		return fmt.Errorf("partition %s-%d: %w", r.Topic, r.Partition, err)
	}
	if next.PartitionEpoch != cur.PartitionEpoch+1 {
		return fmt.Errorf("partition %s-%d: partition epoch %d, current %d", r.Topic,
			r.Partition, next.PartitionEpoch, cur.PartitionEpoch)
	}
	changed := next.Leader != cur.Leader
	if (changed && next.LeaderEpoch != cur.LeaderEpoch+1) ||
		(!changed && next.LeaderEpoch != cur.LeaderEpoch) {
		return fmt.Errorf("partition %s-%d: leader %d epoch %d after leader %d epoch %d",
			r.Topic, r.Partition, next.Leader, next.LeaderEpoch, cur.Leader, cur.LeaderEpoch)
	}
	if changed && next.Leader != NoLeader && !r.Unclean && !slices.Contains(cur.ISR,
		next.Leader) {
		return fmt.Errorf("partition %s-%d: leader %d is not in the ISR %v (not unclean)",
			r.Topic, r.Partition, next.Leader, cur.ISR)
	}
	*cur = next.Clone()
	return nil
}

// Check says whether a partition state is well formed: replicas distinct and not
// empty, an ISR that is a non-empty subset of them, a leader that is in the ISR or
// NoLeader, adding and removing subsets of the replicas, epochs not negative.
func (s PartitionState) Check() error {
	switch {
	case len(s.Replicas) == 0 || hasDup(s.Replicas):
		return fmt.Errorf("replicas %v must be distinct and not empty", s.Replicas)
	case len(s.ISR) == 0 || hasDup(s.ISR) || !subset(s.ISR, s.Replicas):
		return fmt.Errorf("ISR %v must be a non-empty set of replicas %v", s.ISR, s.Replicas)
	case s.Leader != NoLeader && !slices.Contains(s.ISR, s.Leader):
		return fmt.Errorf("leader %d is not in the ISR %v", s.Leader, s.ISR)
	case !subset(s.Adding, s.Replicas) || !subset(s.Removing, s.Replicas):
		return fmt.Errorf("adding %v and removing %v must be replicas %v", s.Adding,
			s.Removing, s.Replicas)
	case s.LeaderEpoch < 0 || s.PartitionEpoch < 0:
		return fmt.Errorf("negative epoch (leader %d, partition %d)", s.LeaderEpoch,
			s.PartitionEpoch)
	}
	return nil
}

// Clone returns a copy sharing no slice with s.
func (s PartitionState) Clone() PartitionState {
	s.Replicas = slices.Clone(s.Replicas)
	s.ISR = slices.Clone(s.ISR)
	s.Adding = slices.Clone(s.Adding)
	s.Removing = slices.Clone(s.Removing)
	return s
}

func hasDup(xs []int32) bool {
	for i := range xs {
		if slices.Contains(xs[i+1:], xs[i]) {
			return true
		}
	}
	return false
}

func subset(xs, of []int32) bool {
	for _, x := range xs {
		if !slices.Contains(of, x) {
			return false
		}
	}
	return true
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

// Partition returns a copy of one partition's state. assigned is false for a
// partition of an unassigned topic (created before replica placement): it has one
// replica, on the node that hosts it, which leads it in epoch 0. ok is false when the
// partition does not exist.
func (im *Image) Partition(topic string, p int32) (s PartitionState, assigned, ok bool) {
	t := im.topics[topic]
	if t == nil || p < 0 || p >= t.Partitions {
		return PartitionState{}, false, false
	}
	if t.States == nil {
		return PartitionState{}, false, true
	}
	return t.States[p].Clone(), true, true
}

// NextProducerID is the first producer id not yet handed out in a committed block.
func (im *Image) NextProducerID() int64 { return im.nextProducerID }

// ClusterID is the cluster's id, or "" before a ClusterCreated record.
func (im *Image) ClusterID() string { return im.clusterID }

// Broker returns a copy of a registered broker.
func (im *Image) Broker(id int32) (Broker, bool) {
	b, ok := im.brokers[id]
	if !ok {
		return Broker{}, false
	}
	return *b, true
}

// Brokers returns every registered broker, by id.
func (im *Image) Brokers() []Broker {
	out := make([]Broker, 0, len(im.brokers))
	for _, b := range im.brokers {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// MaxBrokerEpoch is the greatest broker epoch ever registered; the next registration
// takes a greater one.
func (im *Image) MaxBrokerEpoch() int64 { return im.maxBrokerEpoch }

func sortedConfigs(in []Config) []Config {
	out := append([]Config(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
