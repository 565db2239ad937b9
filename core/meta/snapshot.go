package meta

import (
	"reflect"
	"slices"
)

// Snapshot returns records that rebuild the image from an empty one: the cluster id if
// fixed, one BrokerRegistered per broker (with its epoch and state), one
// TopicCreated per topic (with its current partitions, their states when assigned, and
// config overrides), in name order, then the producer-id block if one was ever
// committed, then one ScramCredentialSet per SCRAM credential, then one
// ClientQuotaAltered per client quota entity, then one ACLsCreated with every ACL. A
// metadata log may store them in place of the records they summarise (core/broker
// Start.Snapshot); applying them gives an image equal to this one (Equal), though not
// the same count of applied records.
//
// Brokers are written in epoch order (the order they registered in): a registration
// applies only with an epoch greater than every earlier one. A broker unregistered
// with the greatest epoch is written registered and unregistered after them, so that
// the next registration still needs a greater epoch.
func (im *Image) Snapshot() []Record {
	names := im.TopicNames()
	out := make([]Record, 0, len(names)+len(im.brokers)+2)
	if im.clusterID != "" {
		out = append(out, Record{Kind: KindClusterCreated, ClusterID: im.clusterID})
	}
	for _, b := range im.brokersByEpoch() {
		out = append(out, Record{Kind: KindBrokerRegistered, NodeID: b.ID,
			Incarnation: b.Incarnation, BrokerEpoch: b.Epoch, Host: b.Host, Port: b.Port,
			Rack: b.Rack, BrokerState: b.State, Listeners: slices.Clone(b.Listeners),
			StorageID: b.StorageID, StorageLost: b.StorageLost})
	}
	out = append(out, im.retiredSnapshot()...)
	for _, n := range names {
		t := im.topics[n]
		var states []PartitionState
		for _, s := range t.States {
			states = append(states, s.Clone())
		}
		out = append(out, Record{Kind: KindTopicCreated, Topic: t.Name, TopicID: t.ID,
			Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor,
			Configs: append([]Config(nil), t.Configs...), PartitionStates: states})
	}
	if im.nextProducerID != 0 {
		out = append(out, Record{Kind: KindProducerIDBlock, NextProducerID: im.nextProducerID})
	}
	out = append(out, im.scramSnapshot()...)
	out = append(out, im.quotaSnapshot()...)
	if im.acls.Len() > 0 {
		out = append(out, Record{Kind: KindACLsCreated, ACLs: im.acls.Sorted()})
	}
	return out
}

func (im *Image) brokersByEpoch() []Broker {
	bs := im.Brokers()
	for i := 1; i < len(bs); i++ { // insertion sort: a handful of brokers
		for j := i; j > 0 && bs[j].Epoch < bs[j-1].Epoch; j-- {
			bs[j], bs[j-1] = bs[j-1], bs[j]
		}
	}
	return bs
}

// Equal says whether two images hold the same metadata (cluster id, brokers, topics,
// their ids, partitions, partition states and overrides, and the next producer id).
// The greatest broker epoch counts too: it decides which registrations apply next.
func (im *Image) Equal(o *Image) bool {
	return im.maxBrokerEpoch == o.maxBrokerEpoch &&
		reflect.DeepEqual(im.Snapshot(), o.Snapshot())
}
