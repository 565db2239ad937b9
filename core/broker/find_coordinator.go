package broker

// FindCoordinator (API key 10), versions 0–4.
//
// Behaviour: this single node coordinates every group, so the answer is always this
// node — unless the group's offsets partition is offline: COORDINATOR_NOT_AVAILABLE,
// which clients retry. As in Kafka, the first group lookup creates __consumer_offsets
// (commits wait for it). v4 batches keys: one entry per key, in request order.
// Transaction coordinators (key type 1) are this node too: InitProducerId then refuses
// transactional ids until transactions exist, which clients report at once instead of
// retrying forever. Other key types get INVALID_REQUEST.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

func (gc *groupCoordinator) handleFindCoordinator(listener string,
	m *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := m.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if m.Version >= 4 {
		for _, key := range m.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key = key
			c.NodeID, c.Host, c.Port, c.ErrorCode, c.ErrorMessage =
				gc.findCoordinator(listener, key, m.CoordinatorType)
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	}
	resp.NodeID, resp.Host, resp.Port, resp.ErrorCode, resp.ErrorMessage =
		gc.findCoordinator(listener, m.CoordinatorKey, m.CoordinatorType)
	return resp
}

// findCoordinator answers for one key: node, host, port, error code and message.
// The address is this node's on the listener the request arrived on.
func (gc *groupCoordinator) findCoordinator(listener, key string, keyType int8) (int32, string,
	int32, int16, *string) {
	code := int16(0)
	switch keyType {
	case coordinatorGroup:
		gc.ensureOffsetsTopic()
		code = gc.coordinatorCode(key)
	case coordinatorTransaction:
	default:
		code = kerr.InvalidRequest.Code
	}
	if code != 0 {
		msg := kerr.ErrorForCode(code).Error()
		return -1, "", -1, code, &msg
	}
	host, port := gc.cfg.advertisedOn(listener)
	return gc.cfg.NodeID, host, port, 0, nil
}
