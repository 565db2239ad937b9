package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

// A registration crosses the wire with every listener, the inter-broker one first as
// its address; one listener named PLAINTEXT crosses as before (no listener list in the
// record), so registrations of single-listener nodes do not change.
func TestRegistrationListenersOnTheWire(t *testing.T) {
	roundTrip := func(reg controller.RegisterBroker) controller.RegisterBroker {
		req, err := wireRequest(reg)
		require.NoError(t, err)
		decoded := kmsg.NewPtrBrokerRegistrationRequest()
		decoded.SetVersion(req.GetVersion())
		require.NoError(t, decoded.ReadFrom(req.AppendTo(nil)))
		msg, ok := controllerRequest(decoded)
		require.True(t, ok)
		return msg.(controller.RegisterBroker)
	}
	multi := controller.RegisterBroker{NodeID: 2, ClusterID: "c", Host: "10.0.0.2", Port: 9093,
		Listeners: []meta.Endpoint{{Name: "INTERNAL", Host: "10.0.0.2", Port: 9093},
			{Name: "EXTERNAL", Host: "kafka2.example", Port: 9092}}}
	require.Equal(t, multi, roundTrip(multi))

	single := controller.RegisterBroker{NodeID: 1, ClusterID: "c", Host: "h", Port: 9092}
	require.Equal(t, single, roundTrip(single))
	withName := single
	withName.Listeners = []meta.Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}
	require.Equal(t, single, roundTrip(withName))
}

// A controlled shutdown crosses the wire as KRaft's: a BrokerHeartbeat with
// WantShutdown, answered ShouldShutdown once the controller is done; a refusal keeps
// its code and does not say ShouldShutdown.
func TestControlledShutdownOnTheWire(t *testing.T) {
	req, err := wireRequest(controller.ControlledShutdown{NodeID: 3, BrokerEpoch: 9})
	require.NoError(t, err)
	decoded := kmsg.NewPtrBrokerHeartbeatRequest()
	decoded.SetVersion(req.GetVersion())
	require.NoError(t, decoded.ReadFrom(req.AppendTo(nil)))
	msg, ok := controllerRequest(decoded)
	require.True(t, ok)
	require.Equal(t, controller.ControlledShutdown{NodeID: 3, BrokerEpoch: 9}, msg)

	for _, code := range []int16{0, codeNotController} {
		resp := controllerResponse(decoded, controller.ControlledShutdownResponse{Err: code})
		back, err := wireResponse(resp)
		require.NoError(t, err)
		require.Equal(t, controller.HeartbeatResponse{Err: code, ShuttingDown: code == 0},
			back)
	}
	plain := kmsg.NewPtrBrokerHeartbeatRequest()
	msg, _ = controllerRequest(plain)
	require.IsType(t, controller.Heartbeat{}, msg, "without WantShutdown: a heartbeat")
}

// An UnregisterBroker a node forwards to the controller's node crosses the wire as
// Kafka's own request, and the answer keeps its code and message.
func TestUnregisterBrokerOnTheWire(t *testing.T) {
	req, err := wireRequest(controller.UnregisterBroker{NodeID: 4})
	require.NoError(t, err)
	decoded := kmsg.NewPtrUnregisterBrokerRequest()
	decoded.SetVersion(req.GetVersion())
	require.NoError(t, decoded.ReadFrom(req.AppendTo(nil)))
	require.Equal(t, int32(4), decoded.BrokerID)
	_, routed := controllerRequest(decoded)
	require.False(t, routed, "the receiving node's broker serves it, not its controller")

	resp := decoded.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	resp.ErrorCode, resp.ErrorMessage = codeInvalidRequestForTest, kmsg.StringPtr("why")
	back, err := wireResponse(resp)
	require.NoError(t, err)
	require.Equal(t, controller.UnregisterBrokerResponse{Err: codeInvalidRequestForTest,
		Message: "why"}, back)
}

const codeInvalidRequestForTest int16 = 42
