package broker

import "github.com/sluicemq/sluice/core/meta"

// The cluster as Metadata and DescribeCluster show it. A node whose metadata log holds
// broker registrations (a quorum's nodes, docs/controller.md) lists the registered
// brokers that are not fenced, each with its address on the listener the request
// arrived on (a broker that registered listeners but not that one is left out, as
// Kafka does); one without any (a single node with its own log, or a quorum before
// the first registration committed) lists itself, as before.

// brokerView is one broker as clients see it.
type brokerView struct {
	id   int32
	host string
	port int32
	rack string
}

// liveBrokers lists the brokers clients of the named listener may use, by id.
func (b *Broker) liveBrokers(listener string) []brokerView {
	var out []brokerView
	for _, br := range b.image.Brokers() {
		if br.State == meta.BrokerFenced {
			continue
		}
		v := brokerView{id: br.ID, rack: br.Rack}
		ok := true
		if br.ID == b.cfg.NodeID {
			// Its own listener as it is now: a restart may have moved it, and the image
			// holds the last life's registration until this one's commits.
			v.host, v.port = b.cfg.advertisedOn(listener)
		} else if v.host, v.port, ok = br.Endpoint(listener); !ok {
			continue
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		host, port := b.cfg.advertisedOn(listener)
		return []brokerView{{id: b.cfg.NodeID, host: host, port: port}}
	}
	return out
}

// advertisedOn is this node's advertised address on the named listener; the default
// one (AdvertisedHost, AdvertisedPort) for a listener it does not know.
func (c *Config) advertisedOn(listener string) (string, int32) {
	for _, e := range c.Listeners {
		if e.Name == listener {
			return e.Host, e.Port
		}
	}
	return c.AdvertisedHost, c.AdvertisedPort
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
