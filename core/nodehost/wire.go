package nodehost

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/controller"
	"github.com/sluicemq/sluice/core/meta"
)

// The controller's RPCs on the wire: BrokerRegistration, BrokerHeartbeat,
// AllocateProducerIds and AlterPartition, Kafka's own messages (kmsg), converted to and
// from the controller's typed messages here so that the actors never see the codec's
// shapes. A registration lists every advertised listener of the node, the one its peers
// use first: that first one is the registration's Host and Port. An AlterPartition
// carries one partition; from v2 it names the topic by id only, which the host resolves
// on its controller's image (resolveTopic).

// ControllerRequest converts a controller RPC a peer sent; ok is false for other keys.
func ControllerRequest(req kmsg.Request) (controller.Message, bool) {
	switch m := req.(type) {
	case *kmsg.BrokerRegistrationRequest:
		return registration(m), true
	case *kmsg.BrokerHeartbeatRequest:
		if m.WantShutdown {
			// KRaft's controlled shutdown: heartbeats asking to shut down, until the
			// answer says ShouldShutDown. Sluice's controller answers one such request
			// once the broker is off every partition it can leave.
			return controller.ControlledShutdown{NodeID: m.BrokerID,
				BrokerEpoch: m.BrokerEpoch}, true
		}
		idx := uint64(0)
		if m.CurrentMetadataOffset > 0 {
			idx = uint64(m.CurrentMetadataOffset)
		}
		return controller.Heartbeat{NodeID: m.BrokerID, BrokerEpoch: m.BrokerEpoch,
			MetadataIndex: idx, WantFence: m.WantFence}, true
	case *kmsg.AllocateProducerIDsRequest:
		return controller.AllocateProducerIDs{NodeID: m.BrokerID,
			BrokerEpoch: m.BrokerEpoch}, true
	case *kmsg.AlterPartitionRequest:
		return alterPartitionRequest(m), true
	}
	return nil, false
}

// refusal answers a controller RPC whose sender may not do CLUSTER_ACTION.
func refusal(req kmsg.Request) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	code := kerr.ClusterAuthorizationFailed.Code
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		r.ErrorCode = code
	case *kmsg.BrokerHeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.AllocateProducerIDsResponse:
		r.ErrorCode = code
	case *kmsg.AlterPartitionResponse:
		r.ErrorCode = code
	}
	return resp
}

func registration(m *kmsg.BrokerRegistrationRequest) controller.RegisterBroker {
	reg := controller.RegisterBroker{NodeID: m.BrokerID, Incarnation: m.IncarnationID,
		ClusterID: m.ClusterID}
	if len(m.LogDirs) > 0 { // v2+: the node's one data directory (KIP-858)
		reg.StorageID = m.LogDirs[0]
	}
	if len(m.Listeners) > 0 {
		reg.Host, reg.Port = m.Listeners[0].Host, int32(m.Listeners[0].Port)
	}
	if len(m.Listeners) > 1 || (len(m.Listeners) == 1 && m.Listeners[0].Name != "PLAINTEXT") {
		for _, l := range m.Listeners {
			reg.Listeners = append(reg.Listeners, meta.Endpoint{Name: l.Name, Host: l.Host,
				Port: int32(l.Port)})
		}
	}
	if m.Rack != nil {
		reg.Rack = *m.Rack
	}
	return reg
}

// alterPartitionRequest converts an AlterPartition's first partition (the broker sends
// one per request; an empty request converts to one the controller refuses).
func alterPartitionRequest(m *kmsg.AlterPartitionRequest) controller.AlterPartition {
	ap := controller.AlterPartition{NodeID: m.BrokerID, BrokerEpoch: m.BrokerEpoch,
		Partition: -1}
	if len(m.Topics) == 0 || len(m.Topics[0].Partitions) == 0 {
		return ap
	}
	t, p := m.Topics[0], m.Topics[0].Partitions[0]
	ap.Topic, ap.Partition = t.Topic, p.Partition
	ap.LeaderEpoch, ap.PartitionEpoch = p.LeaderEpoch, p.PartitionEpoch
	ap.NewISR = append([]int32(nil), p.NewISR...)
	if len(ap.NewISR) == 0 {
		for _, e := range p.NewEpochISR {
			ap.NewISR = append(ap.NewISR, e.BrokerID)
		}
	}
	return ap
}

// ControllerResponse converts the controller's answer to the wire response of req.
func ControllerResponse(req kmsg.Request, resp controller.Response) kmsg.Response {
	out := req.ResponseKind()
	out.SetVersion(req.GetVersion())
	switch o := out.(type) {
	case *kmsg.BrokerRegistrationResponse:
		o.ErrorCode = resp.ErrCode()
		if r, ok := resp.(controller.RegisterBrokerResponse); ok {
			o.BrokerEpoch = r.BrokerEpoch
		}
	case *kmsg.BrokerHeartbeatResponse:
		o.ErrorCode = resp.ErrCode()
		switch r := resp.(type) {
		case controller.HeartbeatResponse:
			o.IsFenced, o.ShouldShutdown, o.IsCaughtUp = r.Fenced, r.ShuttingDown, !r.Fenced
		case controller.ControlledShutdownResponse:
			o.IsFenced, o.ShouldShutdown = false, r.Err == 0
		}
	case *kmsg.AllocateProducerIDsResponse:
		o.ErrorCode = resp.ErrCode()
		if r, ok := resp.(controller.AllocateProducerIDsResponse); ok && r.Err == 0 {
			o.ProducerIDStart, o.ProducerIDLen = r.Start, r.Len
		}
	case *kmsg.AlterPartitionResponse:
		alterPartitionResponse(req.(*kmsg.AlterPartitionRequest), o, resp)
	}
	return out
}

// alterPartitionResponse answers an AlterPartition's partition with the controller's
// code and the partition's state.
func alterPartitionResponse(req *kmsg.AlterPartitionRequest, o *kmsg.AlterPartitionResponse,
	resp controller.Response) {
	if len(req.Topics) == 0 || len(req.Topics[0].Partitions) == 0 {
		o.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	rt := kmsg.NewAlterPartitionResponseTopic()
	rt.Topic, rt.TopidID = req.Topics[0].Topic, req.Topics[0].TopicID
	rp := kmsg.NewAlterPartitionResponseTopicPartition()
	rp.Partition, rp.ErrorCode = req.Topics[0].Partitions[0].Partition, resp.ErrCode()
	if r, ok := resp.(controller.AlterPartitionResponse); ok {
		rp.LeaderID, rp.LeaderEpoch = r.State.Leader, r.State.LeaderEpoch
		rp.ISR, rp.PartitionEpoch = r.State.ISR, r.State.PartitionEpoch
	}
	rt.Partitions = []kmsg.AlterPartitionResponseTopicPartition{rp}
	o.Topics = []kmsg.AlterPartitionResponseTopic{rt}
}

// WireRequest converts a lifecycle or broker RPC for sending to a peer's controller.
// CreateTopic and CreatePartitions have none: a node that is not the controller
// forwards the client's CreateTopics itself (core/broker/controller_port.go).
func WireRequest(msg controller.Message) (kmsg.Request, error) {
	switch m := msg.(type) {
	case controller.RegisterBroker:
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.BrokerID, req.ClusterID, req.IncarnationID = m.NodeID, m.ClusterID, m.Incarnation
		if m.StorageID != ([16]byte{}) {
			req.LogDirs = [][16]byte{m.StorageID}
		}
		if len(m.Listeners) == 0 {
			l := kmsg.NewBrokerRegistrationRequestListener()
			l.Name, l.Host, l.Port = "PLAINTEXT", m.Host, uint16(m.Port)
			req.Listeners = []kmsg.BrokerRegistrationRequestListener{l}
		}
		for _, e := range m.Listeners {
			l := kmsg.NewBrokerRegistrationRequestListener()
			l.Name, l.Host, l.Port = e.Name, e.Host, uint16(e.Port)
			req.Listeners = append(req.Listeners, l)
		}
		if m.Rack != "" {
			req.Rack = &m.Rack
		}
		return req, nil
	case controller.Heartbeat:
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch = m.NodeID, m.BrokerEpoch
		req.CurrentMetadataOffset, req.WantFence = int64(m.MetadataIndex), m.WantFence
		return req, nil
	case controller.ControlledShutdown:
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.BrokerID, req.BrokerEpoch, req.WantShutdown = m.NodeID, m.BrokerEpoch, true
		return req, nil
	case controller.AllocateProducerIDs:
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = m.NodeID, m.BrokerEpoch
		return req, nil
	case controller.UnregisterBroker:
		// The controller's node serves it with its broker, which asks its controller
		// (core/broker/unregister_broker.go).
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = m.NodeID
		return req, nil
	}
	return nil, fmt.Errorf("no wire form for %T", msg)
}

// WireResponse converts a peer controller's answer to a lifecycle or broker RPC.
func WireResponse(resp kmsg.Response) (controller.Response, error) {
	switch r := resp.(type) {
	case *kmsg.BrokerRegistrationResponse:
		return controller.RegisterBrokerResponse{Err: r.ErrorCode, BrokerEpoch: r.BrokerEpoch}, nil
	case *kmsg.BrokerHeartbeatResponse:
		return controller.HeartbeatResponse{Err: r.ErrorCode, Fenced: r.IsFenced,
			ShuttingDown: r.ShouldShutdown}, nil
	case *kmsg.AllocateProducerIDsResponse:
		return controller.AllocateProducerIDsResponse{Err: r.ErrorCode,
			Start: r.ProducerIDStart, Len: r.ProducerIDLen}, nil
	case *kmsg.UnregisterBrokerResponse:
		out := controller.UnregisterBrokerResponse{Err: r.ErrorCode}
		if r.ErrorMessage != nil {
			out.Message = *r.ErrorMessage
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected response %T from a controller", resp)
}
