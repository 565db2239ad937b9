package broker

// FindCoordinator (API key 10), versions 0–4.
//
// Behaviour: with an assigned __consumer_offsets topic (a cluster, groups_load.go) the
// coordinator is the leader of the group's offsets partition, named with its address on
// the listener the request came in on; COORDINATOR_NOT_AVAILABLE while the partition
// has no leader, its leader is fenced or unregistered, or the topic is still being
// created. A node that coordinates every group (a single node) answers itself — unless
// the group's offsets partition is offline: COORDINATOR_NOT_AVAILABLE, which clients
// retry. As in Kafka, the first group lookup creates __consumer_offsets (on a single
// node commits wait for it). v4 batches keys: one entry per key, in request order.
// Transaction coordinators (key type 1) are this node too: InitProducerId then refuses
// transactional ids until transactions exist, which clients report at once instead of
// retrying forever. Other key types get INVALID_REQUEST.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicemq/sluice/core/meta"
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
	code, node := int16(0), gc.cfg.NodeID
	switch keyType {
	case coordinatorGroup:
		gc.ensureOffsetsTopic()
		if gc.offsetsClustered() {
			node, code = gc.coordinatorOf(key)
		} else {
			code = gc.coordinatorCode(key)
		}
	case coordinatorTransaction:
	default:
		code = kerr.InvalidRequest.Code
	}
	host, port := gc.cfg.advertisedOn(listener)
	if code == 0 && node != gc.cfg.NodeID {
		if host, port, code = gc.peerAddress(node, listener); code != 0 {
			gc.hit(pCoordinatorUnavailable)
		}
	}
	if code != 0 {
		msg := kerr.ErrorForCode(code).Error()
		return -1, "", -1, code, &msg
	}
	return node, host, port, 0, nil
}

// peerAddress is another node's address on the named listener, from its registration;
// COORDINATOR_NOT_AVAILABLE when it is not registered, fenced, or has no such listener.
func (gc *groupCoordinator) peerAddress(id int32, listener string) (string, int32, int16) {
	br, ok := gc.image.Broker(id)
	if !ok || br.State == meta.BrokerFenced {
		return "", -1, kerr.CoordinatorNotAvailable.Code
	}
	host, port, ok := br.Endpoint(listener)
	if !ok {
		return "", -1, kerr.CoordinatorNotAvailable.Code
	}
	return host, port, 0
}
