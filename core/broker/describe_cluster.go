package broker

// DescribeCluster (key 60), versions 0–1.
//
// Returns the cluster id, the metadata quorum's leader as the controller, the live
// brokers (cluster_view.go: the registered unfenced ones, else this node), and the "not provided" default for ClusterAuthorizedOperations.
// From v1 the client names the endpoint type it wants: brokers (1) are served;
// controllers (2) → UNSUPPORTED_ENDPOINT_TYPE, since this node is not reachable as a
// KRaft controller endpoint.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// endpointTypeBrokers is DescribeCluster's EndpointType for brokers (v1+).
const endpointTypeBrokers = 1

func (b *Broker) handleDescribeCluster(listener string,
	m *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := m.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeBrokers
	if m.Version >= 1 && m.EndpointType != endpointTypeBrokers {
		resp.EndpointType = m.EndpointType
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = strp("only the broker endpoint type (1) is served")
		return resp
	}
	resp.ClusterID = b.clusterID()
	resp.ControllerID = b.controllerID()
	for _, v := range b.liveBrokers(listener) {
		br := kmsg.NewDescribeClusterResponseBroker()
		br.NodeID, br.Host, br.Port = v.id, v.host, v.port
		if v.rack != "" {
			br.Rack = strp(v.rack)
		}
		resp.Brokers = append(resp.Brokers, br)
	}
	return resp
}
