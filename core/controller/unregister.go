package controller

import (
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// UnregisterBroker removes a dead broker from the cluster's metadata (Kafka's
// UnregisterBroker, key 64; `sluice cluster unregister`): the machine of a non-voter
// broker is gone and its registration would otherwise stay forever. Only a broker
// that is fenced, not heard from within the session timeout, hosts no replica and is
// not a voter of the metadata quorum is removed (DecideUnregister); the node then
// removes it from the raft configuration too when it is a non-voter there.
type UnregisterBroker struct{ NodeID int32 }

// UnregisterBrokerResponse: Err 0 once the BrokerUnregistered record committed;
// Message says why a refusal was made.
type UnregisterBrokerResponse struct {
	Err     int16
	Message string
}

func (UnregisterBroker) isMessage() {}

func (r UnregisterBrokerResponse) ErrCode() int16 { return r.Err }

// OpUnregister proposes BrokerUnregistered for an UnregisterBroker (a number of its
// own, beyond pending.go's and reassign.go's).
const OpUnregister Op = 80

// SetVoters tells the controller which node ids vote in the metadata quorum
// (--voters): they cannot be unregistered. Without it none is refused as a voter.
func (c *Controller) SetVoters(ids []int32) { c.voters = slices.Clone(ids) }

// DecideUnregister decides an UnregisterBroker against the image: the record to
// propose, or the code and message of a refusal. Kafka unregisters any broker and
// leaves its replicas in place; Sluice is stricter so that no partition names a broker
// the image does not know and a live broker is not pulled from under its clients:
//   - a voter of the metadata quorum: INVALID_REQUEST (removing voters is not
//     supported);
//   - a node id not registered: BROKER_ID_NOT_REGISTERED;
//   - a broker not fenced (unfenced or in controlled shutdown), or heard from within
//     the session timeout: INVALID_REQUEST, it may be alive;
//   - a broker listed among any partition's replicas: INVALID_REQUEST, move them first.
func DecideUnregister(im *meta.Image, voters []int32, contacts Contacts, now core.Time,
	sessionMs int64, id int32) (meta.Record, int16, string) {
	if slices.Contains(voters, id) {
		return meta.Record{}, codeInvalidRequest, fmt.Sprintf("Node %d is a voter of the "+
			"metadata quorum (--voters): unregistering voters is not supported; only "+
			"brokers outside --voters can be removed.", id)
	}
	b, ok := im.Broker(id)
	if !ok {
		return meta.Record{}, codeNotRegistered, fmt.Sprintf("Broker %d is not registered.",
			id)
	}
	if mutantOn("unregister-live-broker") {
		contacts, b.State = nil, meta.BrokerFenced
	}
	if b.State != meta.BrokerFenced {
		return meta.Record{}, codeInvalidRequest, fmt.Sprintf("Broker %d is %v: it is "+
			"alive. Stop it; it is fenced once broker.session.timeout.ms passes without its "+
			"heartbeat.", id, b.State)
	}
	if last, seen := contacts[id]; seen && !Expired(last, now, sessionMs) {
		return meta.Record{}, codeInvalidRequest, fmt.Sprintf("Broker %d may be alive: it "+
			"was heard from (or given a session by a newly active controller) %d ms ago; "+
			"retry once broker.session.timeout.ms (%d ms) has passed.", id,
			(now-last)/1e6, sessionMs)
	}
	if n, first := im.ReplicasOn(id); n > 0 {
		return meta.Record{}, codeInvalidRequest, fmt.Sprintf("Broker %d still hosts %d "+
			"partition replicas (%s first): move them to other brokers first (sluice topic "+
			"reassign, or AlterPartitionReassignments).", id, n, first)
	}
	return meta.Record{Kind: meta.KindBrokerUnregistered, NodeID: id, BrokerEpoch: b.Epoch},
		0, ""
}

func (c *Controller) unregister(id uint64, m UnregisterBroker) {
	if c.isBusy(brokerKey(m.NodeID)) {
		c.env.Answer(id, UnregisterBrokerResponse{Err: codeRetriable, Message: fmt.Sprintf(
			"A change of broker %d is in flight; retry.", m.NodeID)})
		return
	}
	rec, code, why := DecideUnregister(c.image, c.voters, c.liveContacts(), c.now,
		c.cfg.SessionTimeoutMs, m.NodeID)
	if code != 0 {
		c.lg.Info("broker unregistration refused", zap.Int32("broker", m.NodeID),
			zap.Int16("code", code), zap.String("why", why))
		c.env.Answer(id, UnregisterBrokerResponse{Err: code, Message: why})
		return
	}
	c.lg.Info("unregistering broker", zap.Int32("broker", m.NodeID),
		zap.Int64("broker_epoch", rec.BrokerEpoch))
	c.propose(Pending{Op: OpUnregister, Key: brokerKey(m.NodeID), Record: rec, Request: id})
}

// forget drops the volatile state of an unregistered broker.
func (c *Controller) forget(id int32) {
	delete(c.registeredAt, id)
	delete(c.contacts, id)
	delete(c.progress, id)
	delete(c.cutoffs, id)
}
