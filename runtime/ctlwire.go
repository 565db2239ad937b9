package runtime

import (
	stdnet "net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/nodehost"
)

// The controller's RPCs on the wire (BrokerRegistration, BrokerHeartbeat,
// AllocateProducerIds, AlterPartition) are converted to and from the controller's
// typed messages by core/nodehost (wire.go), which the simulator shares; these are its
// conversions under the names the runtime uses.
var (
	controllerRequest  = nodehost.ControllerRequest
	controllerResponse = nodehost.ControllerResponse
	wireRequest        = nodehost.WireRequest
	wireResponse       = nodehost.WireResponse
)

var codeNotController = kerr.NotController.Code

// notControllerResponse answers a controller RPC on a node that runs no controller.
func notControllerResponse(req kmsg.Request) kmsg.Response {
	msg, _ := controllerRequest(req)
	var resp controller.Response
	switch msg.(type) {
	case controller.RegisterBroker:
		resp = controller.RegisterBrokerResponse{Err: codeNotController}
	case controller.AllocateProducerIDs:
		resp = controller.AllocateProducerIDsResponse{Err: codeNotController}
	case controller.AlterPartition:
		resp = controller.AlterPartitionResponse{Err: codeNotController}
	default:
		resp = controller.HeartbeatResponse{Err: codeNotController}
	}
	return controllerResponse(req, resp)
}

func hostPort(host string, port int32) string {
	return stdnet.JoinHostPort(host, strconv.Itoa(int(port)))
}
