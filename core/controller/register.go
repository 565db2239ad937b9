package controller

import (
	"fmt"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// Contacts is the controller's volatile view of broker liveness: when each broker was
// last heard from (a registration or a valid heartbeat). It is not in the image: a
// newly active controller starts every registered broker's clock at its activation,
// giving each a full session to find it.
type Contacts map[int32]core.Time

// Registration is the outcome of deciding a RegisterBroker: a record to propose (Propose
// true), or an answer now.
type Registration struct {
	Propose bool
	Record  meta.Record
	Answer  RegisterBrokerResponse
	Why     string // for the log, when refused
}

// DecideRegister decides a broker registration against the image:
//   - a cluster id other than the cluster's (or, before ClusterCreated commits, the
//     controller's own) is refused with INCONSISTENT_CLUSTER_ID: the broker's data
//     directory belongs to another cluster;
//   - a retry by the registered incarnation is answered with its epoch, proposing
//     nothing;
//   - a new incarnation of a node id whose registered incarnation was heard from within
//     the session timeout is refused with DUPLICATE_BROKER_REGISTRATION: two live
//     processes claim the id (a stopped process stops heartbeating, so its restart is
//     accepted at most a session timeout later; Kafka does the same). A broker in
//     controlled shutdown announced its exit: its restart is accepted at once;
//   - otherwise a BrokerRegistered record with broker epoch epoch (greater than every
//     registration's, committed or in flight) is proposed; the broker starts fenced.
func DecideRegister(im *meta.Image, clusterID string, contacts Contacts, now core.Time,
	sessionMs int64, epoch int64, req RegisterBroker) Registration {
	if id := im.ClusterID(); id != "" {
		clusterID = id
	}
	if req.ClusterID != clusterID {
		return Registration{Answer: RegisterBrokerResponse{Err: codeInconsistentClusterID},
			Why: fmt.Sprintf("cluster id %q, this cluster is %q", req.ClusterID, clusterID)}
	}
	if req.NodeID < 0 {
		return Registration{Answer: RegisterBrokerResponse{Err: codeInvalidRequest},
			Why: fmt.Sprintf("node id %d", req.NodeID)}
	}
	if b, ok := im.Broker(req.NodeID); ok {
		if b.Incarnation == req.Incarnation {
			return Registration{Answer: RegisterBrokerResponse{BrokerEpoch: b.Epoch}}
		}
		last, seen := contacts[req.NodeID]
		if seen && !Expired(last, now, sessionMs) && b.State != meta.BrokerShuttingDown {
			return Registration{Answer: RegisterBrokerResponse{Err: codeDuplicateRegistration},
				Why: fmt.Sprintf("node %d is registered by another live process (heard "+
					"from %d ms ago)", req.NodeID, (now-last)/1e6)}
		}
	}
	return Registration{Propose: true, Record: meta.Record{Kind: meta.KindBrokerRegistered,
		NodeID: req.NodeID, Incarnation: req.Incarnation, BrokerEpoch: epoch,
		Host: req.Host, Port: req.Port, Rack: req.Rack, BrokerState: meta.BrokerFenced,
		Listeners: req.Listeners, StorageID: req.StorageID,
		StorageLost: StorageLost(im, req.NodeID, req.StorageID)}}
}

// StorageLost says whether a registration of node id with data directory storage
// comes from a node whose logs are not those of its previous registration: its
// storage id differs from the registered one (or is unknown when the registered one
// is known), or the registered one had lost its storage and was not unfenced since
// (it has not caught up). A first registration, or one after registrations that
// carried no storage id, loses nothing it could be elected from.
func StorageLost(im *meta.Image, id int32, storage [16]byte) bool {
	b, ok := im.Broker(id)
	switch {
	case !ok:
		return false
	case b.StorageLost:
		return true
	case b.StorageID == [16]byte{}:
		return false
	}
	return b.StorageID != storage
}

// Beat is the outcome of deciding a Heartbeat.
type Beat struct {
	Valid   bool // the heartbeat counts as contact
	Propose bool // Record unfences the broker
	Record  meta.Record
	Answer  HeartbeatResponse
}

// DecideHeartbeat decides a heartbeat: from an unregistered node it is refused
// (BROKER_ID_NOT_REGISTERED), from an older registration STALE_BROKER_EPOCH; otherwise
// it counts as contact, and a fenced broker that has applied the metadata log up to its
// own registration (registeredAt) and does not want to stay fenced is unfenced, once
// leadership and ISR places have moved off it (Moved). A restart registers a new
// incarnation fenced: the partitions it led get another leader, or none when it was
// their last ISR member, in a new leader epoch before it may lead again, since its
// log may have lost a tail its followers hold (docs/replication.md, "Restarts").
func DecideHeartbeat(im *meta.Image, registeredAt uint64, req Heartbeat) Beat {
	b, ok := im.Broker(req.NodeID)
	if !ok {
		return Beat{Answer: HeartbeatResponse{Err: codeNotRegistered}}
	}
	if b.Epoch != req.BrokerEpoch {
		return Beat{Answer: HeartbeatResponse{Err: codeStaleBrokerEpoch}}
	}
	out := Beat{Valid: true, Answer: HeartbeatResponse{Fenced: b.State != meta.BrokerUnfenced,
		ShuttingDown: b.State == meta.BrokerShuttingDown}}
	if b.State == meta.BrokerFenced && !req.WantFence && req.MetadataIndex >= registeredAt &&
		(Moved(im, b.ID) || mutantOn("reregister-keeps-leadership")) {
		out.Propose = true
		out.Record = meta.Record{Kind: meta.KindBrokerChange, NodeID: b.ID,
			BrokerEpoch: b.Epoch, BrokerState: meta.BrokerUnfenced}
	}
	return out
}

// checkBroker returns the error for a request naming a broker and its epoch, or 0.
func checkBroker(im *meta.Image, id int32, epoch int64) int16 {
	b, ok := im.Broker(id)
	switch {
	case !ok:
		return codeNotRegistered
	case b.Epoch != epoch:
		return codeStaleBrokerEpoch
	}
	return 0
}
