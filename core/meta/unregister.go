package meta

import (
	"fmt"
	"slices"
)

// Unregistering a broker (KindBrokerUnregistered): the registration leaves the image
// once its broker is fenced and hosts no replica, so that no partition ever names a
// broker the image does not know. Kafka's UnregisterBroker removes a live broker too
// and leaves its replicas in place; Sluice refuses both (docs/operations.md, "Replace a
// dead machine").

// ReplicasOn counts the partitions that list node among their replicas (a
// reassignment's adding and removing replicas included) and names the first of them in
// topic order ("" when none).
func (im *Image) ReplicasOn(node int32) (n int, first string) {
	for _, name := range im.TopicNames() {
		t := im.topics[name]
		for p, s := range t.States {
			if slices.Contains(s.Replicas, node) || slices.Contains(s.Adding, node) ||
				slices.Contains(s.Removing, node) {
				if n == 0 {
					first = fmt.Sprintf("%s-%d", name, p)
				}
				n++
			}
		}
	}
	return n, first
}

func (im *Image) brokerUnregistered(r Record) error {
	b, ok := im.brokers[r.NodeID]
	switch {
	case !ok:
		return fmt.Errorf("broker %d is not registered", r.NodeID)
	case b.Epoch != r.BrokerEpoch:
		return fmt.Errorf("unregistration of broker %d for epoch %d, registered at %d",
			r.NodeID, r.BrokerEpoch, b.Epoch)
	case b.State != BrokerFenced:
		return fmt.Errorf("broker %d is %v, not fenced", r.NodeID, b.State)
	}
	if n, first := im.ReplicasOn(r.NodeID); n > 0 {
		return fmt.Errorf("broker %d still hosts %d replicas (%s)", r.NodeID, n, first)
	}
	delete(im.brokers, r.NodeID)
	if b.Epoch == im.maxBrokerEpoch {
		im.retired = b
	}
	return nil
}

// retiredSnapshot is the records that restore maxBrokerEpoch when the broker that
// registered with it was unregistered since: its registration, fenced, then its
// unregistration. They follow every other registration (its epoch is the greatest).
func (im *Image) retiredSnapshot() []Record {
	b := im.retired
	if b == nil {
		return nil
	}
	return []Record{{Kind: KindBrokerRegistered, NodeID: b.ID, Incarnation: b.Incarnation,
		BrokerEpoch: b.Epoch, Host: b.Host, Port: b.Port, Rack: b.Rack,
		BrokerState: BrokerFenced, Listeners: slices.Clone(b.Listeners)},
		{Kind: KindBrokerUnregistered, NodeID: b.ID, BrokerEpoch: b.Epoch}}
}
