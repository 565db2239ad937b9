package nodehost

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

// The lifecycle's and the broker's RPCs survive the trip to a peer's controller: the
// wire request converts back to the same message, and the controller's answer to the
// same response.
func TestControllerRPCsRoundTripOverTheWire(t *testing.T) {
	msgs := []controller.Message{
		controller.RegisterBroker{NodeID: 2, ClusterID: "c", Incarnation: [16]byte{7},
			StorageID: [16]byte{3, 1},
			Host:      "node2.sim", Port: 9092, Rack: "r1"},
		controller.RegisterBroker{NodeID: 3, ClusterID: "c", Host: "h", Port: 1,
			Listeners: []meta.Endpoint{{Name: "INTERNAL", Host: "h", Port: 1},
				{Name: "EXTERNAL", Host: "e", Port: 2}}},
		controller.Heartbeat{NodeID: 2, BrokerEpoch: 5, MetadataIndex: 42, WantFence: true},
		controller.AllocateProducerIDs{NodeID: 2, BrokerEpoch: 5},
	}
	for _, m := range msgs {
		req, err := WireRequest(m)
		require.NoError(t, err)
		back, ok := ControllerRequest(req)
		require.True(t, ok)
		require.Equal(t, m, back)
	}
	resps := []struct {
		m    controller.Message
		resp controller.Response
	}{
		{msgs[0], controller.RegisterBrokerResponse{BrokerEpoch: 9}},
		{msgs[2], controller.HeartbeatResponse{Fenced: true}},
		{msgs[3], controller.AllocateProducerIDsResponse{Start: 1000, Len: 1000}},
	}
	for _, c := range resps {
		m, resp := c.m, c.resp
		req, err := WireRequest(m)
		require.NoError(t, err)
		back, err := WireResponse(ControllerResponse(req, resp))
		require.NoError(t, err)
		require.Equal(t, resp, back)
	}
	_, err := WireRequest(controller.CreateTopic{Name: "t"})
	require.Error(t, err, "a CreateTopics is forwarded by the broker itself")
}
