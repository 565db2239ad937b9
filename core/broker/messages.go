package broker

// Messages between the broker's parts.
//
// Every call from one part of the broker into another (the replica manager, the group
// coordinator, the controller-side admin queue; docs/actors.md) is one of these typed
// messages, posted on the node's queue (node.post) and routed by Broker.deliver with
// one exhaustive switch. They are delivered at once, in the order the direct calls
// they replaced ran.

import (
	"github.com/sluicemq/sluice/core"
)

// message is one message between parts. The set is closed: the msg* types below.
type message interface{ isMessage() }

// msgDurable (replica manager → group coordinator): tp's high-water mark may have
// moved; the offset writes it now covers are durable.
type msgDurable struct{ tp core.TopicPartition }

// msgPartitionFailed (replica manager → group coordinator): nothing waiting on tp will
// become durable in this incarnation of its log; code is why.
type msgPartitionFailed struct {
	tp   core.TopicPartition
	code int16
}

// msgAwaitOpens (controller → replica manager): continue op once every log queued so
// far is open.
type msgAwaitOpens struct{ op adminOp }

// msgLogsOpened (replica manager → controller): the logs op waited for are open (or
// failed to open: the operation checks which).
type msgLogsOpened struct{ op adminOp }

func (msgDurable) isMessage()         {}
func (msgPartitionFailed) isMessage() {}
func (msgAwaitOpens) isMessage()      {}
func (msgLogsOpened) isMessage()      {}

// deliver routes one message to the part it is for.
func (b *Broker) deliver(m message) {
	switch m := m.(type) {
	case msgDurable:
		b.offsetWritesDurable(m.tp)
	case msgPartitionFailed:
		b.offsetWritesFailed(m.tp, m.code)
	case msgAwaitOpens:
		b.replicaManager.awaitOpens(m.op)
	case msgLogsOpened:
		b.adminOpened(m.op)
	default:
		core.Invariant(false, "B11", "message of unknown type %T", m)
	}
}
