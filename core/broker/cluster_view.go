package broker

import "github.com/sluicemq/sluice/core/meta"

// The cluster as Metadata and DescribeCluster show it. A node whose metadata log holds
// broker registrations (a quorum's nodes, docs/controller.md) lists the registered
// brokers that are not fenced, with the listener each registered; one without any
// (a single node with its own log, or a quorum before the first registration
// committed) lists itself, as before.

// brokerView is one broker as clients see it.
type brokerView struct {
	id   int32
	host string
	port int32
	rack string
}

// liveBrokers lists the brokers clients may use, by id.
func (b *Broker) liveBrokers() []brokerView {
	var out []brokerView
	for _, br := range b.image.Brokers() {
		if br.State == meta.BrokerFenced {
			continue
		}
		v := brokerView{id: br.ID, host: br.Host, port: br.Port, rack: br.Rack}
		if br.ID == b.cfg.NodeID {
			// Its own listener as it is now: a restart may have moved it, and the image
			// holds the last life's registration until this one's commits.
			v.host, v.port = b.cfg.AdvertisedHost, b.cfg.AdvertisedPort
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return []brokerView{{id: b.cfg.NodeID, host: b.cfg.AdvertisedHost,
			port: b.cfg.AdvertisedPort}}
	}
	return out
}

// clusterID is the id the cluster fixed at its first start, else the configured one.
func (b *Broker) clusterID() string {
	if id := b.image.ClusterID(); id != "" {
		return id
	}
	return b.cfg.ClusterID
}

// controllerID is the node clients are told is the controller: the metadata quorum's
// leader when known (its controller is the active one), else this node.
func (b *Broker) controllerID() int32 {
	if b.metaPort.leader >= 0 {
		return b.metaPort.leader
	}
	return b.cfg.NodeID
}
