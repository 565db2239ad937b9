package broker

// A restarted broker leads nothing until the controller has unfenced this incarnation.
//
// A node of a cluster (one with a metadata quorum, whose host registers it with the
// controller: SetMember) replays an image at start that may still name it the leader
// of partitions in the epoch it led before it stopped. After a power loss its log may
// have lost a tail its followers had already fetched: leading on in that epoch, it
// would append different batches at offsets the followers hold, and their epoch-based
// truncation could not see it (docs/replication.md, "Restarts"). So, as a KRaft broker
// opens its data plane only once unfenced, a member's replicas of assigned partitions
// do not lead (and answer leader-only requests, follower fetches included,
// NOT_LEADER_OR_FOLLOWER, which clients retry after refreshing their metadata) until
// the image holds this incarnation's registration in a state other than fenced. The
// controller moves leadership and ISR places off a re-registered broker before it
// unfences it (core/controller, DecideHeartbeat), so by then the image names it leader
// only in a new epoch. Following is allowed meanwhile: that is how it catches up.
// Once open, the gate stays open for the process: later fencing (a session expiry)
// moves leadership through the image as before. A node without a quorum has no
// membership and leads as it always did.

import (
	"go.uber.org/zap"

	"github.com/sluicemq/sluice/core"
	"github.com/sluicemq/sluice/core/meta"
)

// membership is the broker's registration gate.
type membership struct {
	member      bool     // the node registers with a controller (SetMember)
	incarnation [16]byte // this process's registration id
	open        bool     // the image showed this incarnation unfenced
}

// SetMember makes the broker a cluster member registering incarnation inc: it leads no
// partition until the image holds that registration unfenced. Call it before Start.
func (b *Broker) SetMember(inc [16]byte) {
	core.Invariant(!b.started, "B2", "SetMember after Start")
	b.membership = membership{member: true, incarnation: inc}
}

// mayLead says whether this node may lead assigned partitions now.
func (n *node) mayLead() bool {
	return !n.membership.member || n.membership.open || mutantOn("leads-while-fenced")
}

// checkUnfenced opens the gate when the image shows this incarnation registered and
// unfenced, then applies every role (the partitions the image says it leads).
func (b *Broker) checkUnfenced() {
	m := &b.membership
	if !m.member || m.open {
		return
	}
	r, ok := b.image.Broker(b.cfg.NodeID)
	if !ok || r.Incarnation != m.incarnation || r.State == meta.BrokerFenced {
		return
	}
	m.open = true
	b.lg.Info("this incarnation is unfenced: leading the partitions the metadata names",
		zap.Int64("broker_epoch", r.Epoch))
	b.applyRoles()
}
